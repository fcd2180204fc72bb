"""The model-name rule: provider prefixes, aliases and dated snapshots fold into one name."""

from __future__ import annotations

import pytest

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.hints.model_names import family, fold
from mast_otel.processors.hints.settings import HintsConfig


@pytest.mark.parametrize("name, folded", [
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("o1-2024-12-17", "o1"),
    ("gpt-4o-realtime-preview-2024-10-01", "gpt-4o-realtime-preview"),
    ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
    ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
    ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet-v2"),
    ("anthropic.claude-3-5-sonnet-20241022-v2:0", "anthropic.claude-3-5-sonnet"),
    ("mistral-large-latest", "mistral-large"),
])
def test_a_dated_snapshot_or_latest_folds_into_its_family(name, folded):
    assert family(name) == folded
    assert fold(name, snapshots=True) == folded
    assert fold(f"openai/{name}", snapshots=True) == folded  # the provider prefix too


@pytest.mark.parametrize("name", [
    "gpt-4o-mini", "gpt-4-0613", "gpt-3.5-turbo-0125", "mistral-large-2407", "gemini-1.5-pro-002",
    "llama-3.1-70b", "meta-llama/Llama-3.1-8B-Instruct", "model-20241399",  # no date: month 13
    "latest", "-latest", "20241022",
])
def test_names_without_a_date_or_latest_ending_stay(name):
    assert fold(name, snapshots=True) == name


def test_without_the_snapshot_rule_only_prefixes_and_aliases_fold():
    assert fold("openai/gpt-4o-mini-2024-07-18") == "gpt-4o-mini-2024-07-18"
    assert fold("claude-3-5-sonnet-20241022", {"claude-3-5-sonnet-20241022": "sonnet"}) == "sonnet"


def test_an_alias_of_the_exact_name_wins_and_an_alias_of_the_family_covers_its_snapshots():
    aliases = {"claude-3-5-sonnet-20240620": "sonnet-june", "gpt-4o-mini": "mini"}
    assert fold("claude-3-5-sonnet-20240620", aliases, snapshots=True) == "sonnet-june"
    assert fold("claude-3-5-sonnet-20241022", aliases, snapshots=True) == "claude-3-5-sonnet"
    assert fold("openai/gpt-4o-mini-2024-07-18", aliases, snapshots=True) == "mini"


def test_the_rule_is_on_by_default_and_off_by_a_setting():
    assert ProcessorConfig().hints.fold_model_snapshots is True
    assert HintsConfig().model_name("gpt-4o-mini-2024-07-18") == "gpt-4o-mini"
    assert HintsConfig(fold_model_snapshots=False).model_name("gpt-4o-mini-2024-07-18") == "gpt-4o-mini-2024-07-18"
    off = ProcessorConfig.load(hints={"fold_model_snapshots": False})
    assert off.hints.model_name("openai/gpt-4o-mini-2024-07-18") == "gpt-4o-mini-2024-07-18"


@pytest.mark.parametrize("config", [HintsConfig(), HintsConfig(model_aliases={"gpt-4o-mini": "mini", "claude-3-5-sonnet": "sonnet"}),
                                    HintsConfig(fold_model_snapshots=False, model_aliases={"openai/gpt-4o": "4o"})])
def test_a_runs_calls_are_named_alike_whether_each_name_is_folded_once_or_per_call(config):
    """Hint derivation folds each distinct model name of a run once on the shortcuts path, every
    call's on the plain one: the same names either way."""
    from mast_otel.processors.hints import derive_hints
    from mast_otel.processors.model import Role, Run, Span

    models = ["openai/gpt-4o-mini-2024-07-18", "gpt-4o-mini", "claude-3-5-sonnet-20241022", None,
              "openai/gpt-4o-mini-2024-07-18", "openai/gpt-4o", "gpt-4o-mini-latest"]
    named = []
    for shortcuts in (True, False):
        spans = [Span("t", "a", None, "invoke_agent sre", 0, 100, role=Role.AGENT, agent_name="sre")] + [
            Span("t", f"l{i}", "a", "chat", i + 1, i + 2, role=Role.LLM, model=m, finish_reasons=("stop",)) for i, m in enumerate(models)]
        run = derive_hints(Run.from_spans("t", spans, shortcuts=shortcuts), config)
        named.append([s.model for s in run.llm_calls])
    assert named[0] == named[1] == [config.model_name(m) for m in models]
