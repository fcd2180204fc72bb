"""The typed detection thresholds: YAML and environment forms, ranges, the deprecated dotted form,
and the detector registry that reads them."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from mast_otel.processors.config import DetectionConfig, ProcessorConfig, RepetitionConfig
from mast_otel.processors.detectors import DETECTORS


def test_yaml_sets_typed_groups(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("detection:\n  repetition: {min_tool_repeats: 4}\n  termination: {default_max_steps: 20}\n"
                    "  content: {repeated_work_similarity: 0.8}\n")
    detection = ProcessorConfig.load(path).detection
    assert detection.repetition == RepetitionConfig(min_tool_repeats=4)
    assert detection.termination.default_max_steps == 20 and detection.termination.steps_after_success == 4
    assert detection.content.repeated_work_similarity == 0.8 and detection.history.min_messages == 4


def test_environment_nests_into_groups(monkeypatch) -> None:
    monkeypatch.setenv("MAST_OTEL_DETECTION__REPETITION__MIN_TOOL_REPEATS", "4")
    monkeypatch.setenv("MAST_OTEL_DETECTION__HISTORY__DROP_RATIO", "0.25")
    detection = ProcessorConfig.load().detection
    assert detection.repetition.min_tool_repeats == 4 and detection.history.drop_ratio == 0.25


@pytest.mark.parametrize("bad", [{"repetition": {"min_tool_repeat": 3}},  # unknown key
                                 {"repetition": {"min_tool_repeats": 1}},  # fewer than two is no repetition
                                 {"premature": {"budget_fraction": 1.5}},
                                 {"history": {"drop_ratio": -0.1}},
                                 {"termination": {"steps_after_success": 0}},
                                 {"bogus": {"x": 1}}])
def test_unknown_keys_and_out_of_range_values_are_rejected(bad) -> None:
    with pytest.raises(ValidationError):
        DetectionConfig(**bad)


def test_deprecated_dotted_thresholds_still_map_onto_the_typed_fields(monkeypatch) -> None:
    with pytest.warns(FutureWarning, match="detection.thresholds is deprecated"):
        detection = DetectionConfig(thresholds={"repetition.min_tool_repeats": 4, "content.max_answer_words": 8},
                                    repetition={"min_output_repeats": 5})
    assert detection.repetition == RepetitionConfig(min_tool_repeats=4, min_output_repeats=5)
    assert detection.content.max_answer_words == 8
    with pytest.raises(ValueError, match="unknown detection thresholds"):
        DetectionConfig(thresholds={"repetition.min_repeat": 2})
    monkeypatch.setenv("MAST_OTEL_DETECTION__THRESHOLDS", '{"termination.default_max_steps": 7}')
    with pytest.warns(FutureWarning):
        assert ProcessorConfig.load().detection.termination.default_max_steps == 7


def test_every_threshold_has_a_description() -> None:
    for name, field in DetectionConfig.model_fields.items():
        assert field.description or (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)), name
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            assert all(f.description for f in field.annotation.model_fields.values()), name


def test_registry_declares_configs_that_are_detection_sections_and_live_trackers() -> None:
    sections = {f.annotation for f in DetectionConfig.model_fields.values()}
    assert all(d.config is None or d.config in sections for d in DETECTORS)
    live = [d.name for d in DETECTORS if d.live]
    assert live == ["repetition", "history", "unaware_of_termination", "mismatch"]
    assert all(d.tracker(DetectionConfig()) is None for d in DETECTORS if not d.live)
    # one tracker per in-flight trace: each call makes a new one
    assert all(d.tracker(DetectionConfig()) is not d.tracker(DetectionConfig()) for d in DETECTORS if d.live)
