"""Each mode's what-to-do names only guards, settings, attributes and docs sections that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from mast_otel.instrumentation import attributes
from mast_otel.instrumentation.guards.config import GuardConfig
from mast_otel.processors import taxonomy
from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.detectors.settings import DetectionConfig
from mast_otel.processors.what_to_do import heading_anchor, what_to_do

ROOT = Path(__file__).resolve().parents[1]


def resolves(model: type[BaseModel], dotted: str) -> bool:
    """Whether ``dotted`` names a field of ``model`` (through nested sections)."""
    head, _, rest = dotted.partition(".")
    field = model.model_fields.get(head)
    if field is None:
        return False
    if not rest:
        return True
    nested = field.annotation
    return isinstance(nested, type) and issubclass(nested, BaseModel) and resolves(nested, rest)


def test_the_resolver_rejects_settings_that_do_not_exist() -> None:
    assert resolves(ProcessorConfig, "detection.repetition.min_tool_repeats")
    assert not resolves(ProcessorConfig, "detection.repetition.max_tool_repeats")
    assert not resolves(ProcessorConfig, "detection.loop_guard")


@pytest.mark.parametrize("mode", taxonomy.MODE_IDS)
def test_every_mode_says_what_to_do_with_things_that_exist(mode: str) -> None:
    todo = what_to_do(mode)
    assert todo.description == taxonomy.get(mode).definition
    assert todo.prevention and todo.settings
    unknown_guards = [g for g in todo.guards if g not in GuardConfig.model_fields]
    assert not unknown_guards, unknown_guards
    unknown_settings = [s for s in todo.settings if not resolves(ProcessorConfig, s)]
    assert not unknown_settings, unknown_settings
    named = re.findall(r"\bmast\.[a-z_.]*[a-z]", todo.prevention)
    known = {v for k, v in vars(attributes).items() if k.isupper() and isinstance(v, str)}
    assert set(named) <= known, set(named) - known


def test_the_guards_are_the_ones_that_act_on_each_mode() -> None:
    guarded = {m: what_to_do(m).guards for m in taxonomy.MODE_IDS if what_to_do(m).guards}
    assert guarded == {"FM-1.3": ("loop",), "FM-1.5": ("budget",), "FM-2.2": ("clarify_or_read_only",),
                       "FM-3.2": ("verification",), "FM-3.3": ("verification",)}
    for field, info in GuardConfig.model_fields.items():  # each guard says which modes it acts on
        acted_on = set(re.findall(r"FM-\d\.\d", info.description or ""))
        assert acted_on == {m for m, guards in guarded.items() if field in guards}, field


def test_every_detection_threshold_tunes_some_mode() -> None:
    """A threshold no mode names would leave users no way from a finding to the setting that tunes it."""
    named = {s for m in taxonomy.MODE_IDS for s in what_to_do(m).settings}
    for group, info in DetectionConfig.model_fields.items():
        nested = info.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            missing = [f"detection.{group}.{name}" for name in nested.model_fields
                       if f"detection.{group}.{name}" not in named]
            assert not missing, missing


def sections(page: Path) -> dict[str, str]:
    """Anchor -> text of each level-2 section of a Markdown page."""
    text = page.read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {heading_anchor(parts[i]): parts[i + 1] for i in range(1, len(parts), 2)}


@pytest.mark.parametrize("mode", taxonomy.MODE_IDS)
def test_every_docs_link_opens_a_section_that_explains_the_mode(mode: str) -> None:
    todo = what_to_do(mode)
    path, _, anchor = todo.docs.partition("#")
    page = ROOT / path
    assert page.is_file(), path
    found = sections(page)
    assert anchor in found, (anchor, list(found))
    body = found[anchor]
    for part in ("**What it means.**", "**How it is detected.**", "**In the spans.**", "**How to prevent it.**"):
        assert part in body, (mode, part)
    for guard in todo.guards:  # the page names the same guards and settings as the record
        assert f"`{guard}`" in body, (mode, guard)
    assert ("Judge only" in body) == (taxonomy.get(mode).covered_by == ("judge",)), mode
