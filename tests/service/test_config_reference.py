"""docs/processor.md's configuration reference matches the configuration model."""

from __future__ import annotations

from pathlib import Path

from mast_otel.processors.service.configref import END, START, config_reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "processor.md"


def test_docs_hold_the_generated_reference():
    text = DOC.read_text()
    section = text[text.index(START) + len(START):text.index(END)].strip()
    assert section == config_reference().strip(), "regenerate: python -m mast_otel.processors.service.configref"


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
