"""docs/processor.md's configuration reference matches the configuration model."""

from __future__ import annotations

from pathlib import Path

from mast_otel.processors.configref import END, START, config_reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "processor.md"


def test_docs_hold_the_generated_reference():
    text = DOC.read_text()
    section = text[text.index(START) + len(START):text.index(END)].strip()
    assert section == config_reference().strip(), "regenerate: python -m mast_otel.processors.configref --write"


def test_every_page_the_reference_names_exists():
    """The reference is read on its own: a path it points to must be there."""
    import re

    root = DOC.parents[1]
    named = set(re.findall(r"\bdocs/[\w./-]+\.md\b", config_reference()))
    assert [name for name in sorted(named) if not (root / name).is_file()] == []
    assert "built-in patterns (`mast-otel config` lists them)" in config_reference()


def test_reference_covers_every_field_with_its_environment_variable():
    reference = config_reference()
    for key, env in (("receiver.tls.client_ca_file", "MAST_OTEL_RECEIVER__TLS__CLIENT_CA_FILE"),
                     ("assembly.eviction_policy", "MAST_OTEL_ASSEMBLY__EVICTION_POLICY"),
                     ("judge.model", "MAST_OTEL_JUDGE__MODEL")):
        assert f"`{key}`" in reference and f"`{env}`" in reference
    assert "`oldest_first` or `largest_first`" in reference


def test_every_detection_field_has_a_meaning_from_its_description():
    rows = [line for line in config_reference().splitlines() if line.startswith("| `detection.")]
    assert len(rows) >= 14
    for row in rows:
        meaning = row.rstrip(" |").rsplit(" | ", 1)[1]
        assert meaning.strip() and not meaning.startswith("`MAST_OTEL_"), row
    assert "| `detection.repetition.min_tool_repeats` | int | `3` | `MAST_OTEL_DETECTION__REPETITION__MIN_TOOL_REPEATS` |" \
        in config_reference()


def test_every_field_has_a_description():
    """The reference's meaning column comes from ``Field(description=...)`` only: none may be empty."""
    from pydantic import BaseModel

    from mast_otel.processors.config import ProcessorConfig

    def undescribed(model: type[BaseModel], prefix: str) -> list[str]:
        out = []
        for name, field in model.model_fields.items():
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                out += undescribed(annotation, f"{prefix}{name}.")
            elif not (field.description or "").strip():
                out.append(prefix + name)
        return out

    assert undescribed(ProcessorConfig, "") == []
    rows = [line for line in config_reference().splitlines() if line.startswith("| `")]
    assert all(row.rstrip(" |").rsplit(" | ", 1)[1].strip() for row in rows)


def test_tuning_values_reach_the_parts_that_use_them(tmp_path):
    """A few of the values that used to be constants in code, set in the config and seen where used."""
    from mast_otel.processors.config import ProcessorConfig
    from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
    from mast_otel.processors.service.telemetry.metrics import Metrics

    config = ProcessorConfig(receiver={"decode": {"max_attributes": 7, "max_events": 3}},
                             assembly={"span_overhead_bytes": 123, "eviction_target": 0.5})
    options = IngestStage(config, Metrics()).decode_options
    assert (options.max_attributes, options.max_events) == (7, 3)
    from mast_otel.processors.model import Role, Span
    from mast_otel.processors.service.pipeline.assembler import Assembler

    assembler = Assembler(config.assembly)
    span = Span(trace_id="ab" * 16, span_id="cd" * 8, parent_span_id=None, name="invoke_agent a", start_ns=1, end_ns=2,
                role=Role.AGENT, agent_name="a")
    assembler.add([span], 0.0)
    # no raw bytes, no content: the configured overhead and the span's two strings
    assert assembler.buffered_bytes == 123 + len("invoke_agent a") + len("a")
