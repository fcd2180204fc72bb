"""Rendering: stable step ids, truncation markers, the token budget, structure-only runs."""

from __future__ import annotations

import re

from judge_support import make_run

from mast_otel.processors.judge.redact import Redactor
from mast_otel.processors.judge.render import render_run, run_has_content, truncate


def words(text: str) -> int:
    """A tokenizer stand-in for budget arithmetic (the engine uses litellm's)."""
    return len(text.split())


def render(run, budget: int = 100_000, **kw):
    return render_run(run, budget_tokens=budget, count_tokens=words, redactor=Redactor(), **kw)


def test_steps_get_stable_ids_mapped_to_span_ids() -> None:
    run = make_run(6, secret=False)
    rendered = render(run)
    assert list(rendered.step_spans) == [f"S{i}" for i in range(1, 7)]
    assert [rendered.step_spans[f"S{i}"] for i in range(1, 7)] == [s.span_id for s in run.steps]
    assert re.findall(r"^S\d+", rendered.text, re.M) == list(rendered.step_spans)
    assert "S6 tool kubectl_verify kind=verify" in rendered.text and "verification=FAILED" in rendered.text
    assert render(run).text == rendered.text  # deterministic: the cache key depends on it


def test_long_fields_are_cut_with_a_marker_that_says_how_much() -> None:
    text = "a" * 1000 + "END"
    cut = truncate(text, 100)
    assert cut.startswith("a" * 50) and cut.endswith("aEND") and "[903 chars truncated]" in cut
    assert truncate("short", 100) == "short"


def test_over_budget_the_middle_steps_lose_content_then_are_left_out() -> None:
    run = make_run(30, secret=False)
    full = render(run)
    assert not full.compacted
    squeezed = render(run, budget=full.tokens // 2)
    assert squeezed.compacted and squeezed.tokens <= full.tokens // 2
    assert "S1 " in squeezed.text and "S30 " in squeezed.text  # both ends survive
    assert "middle steps" in squeezed.text
    tiny = render(run, budget=full.tokens // 6)
    assert tiny.steps_omitted > 0
    gap = re.search(r"\[(S\d+)\.\.(S\d+): (\d+) steps left out", tiny.text)
    assert gap and int(gap.group(3)) == tiny.steps_omitted
    assert "S1 " in tiny.text and "S30 " in tiny.text


def test_structure_only_rendering_carries_no_content() -> None:
    run = make_run(4, secret=False)
    rendered = render(run, include_content=False)
    assert "kubectl get pods" not in rendered.text and "input:" not in rendered.text
    assert "structure only" in rendered.text
    assert not run_has_content(make_run(4, content=False))
    assert run_has_content(run)


def test_errors_are_shown_with_their_redacted_message() -> None:
    run = make_run(4, secret=False)
    failing = run.steps[1]
    failing.error, failing.error_type = True, "TimeoutError"
    failing.status_message = "login as ops@example.com timed out"
    text = render(run).text
    assert "S2 tool kubectl_get kind=read agent=triage args#" in text and "error=TimeoutError" in text
    assert "error: login as [REDACTED:email] timed out" in text


CODE = "def total(rows):\n    s = 0\n    for r in rows:\n        s += r\n    return s\n"


def test_code_keeps_its_newlines_and_indentation() -> None:
    run = make_run(2, secret=False)
    run.steps[0].output_text = "Here is the code:\n```python\n" + CODE + "```\n\n\n\nDone."
    text = render(run).text
    assert "   output:\n     Here is the code:\n     ```python\n     def total(rows):\n         s = 0\n" in text
    assert "\n\n\n" not in text  # runs of blank lines collapse to one


def test_texts_are_cut_only_as_far_as_the_runs_budget_needs_and_longest_first() -> None:
    run = make_run(4, secret=False)
    long_text = " ".join(f"w{i}" for i in range(3000))
    run.steps[1].tool_result = long_text  # one very long result among short texts
    roomy = render(run)
    assert "truncated" not in roomy.text and "w2999" in roomy.text  # within budget: nothing is cut
    tight = render(run, budget=roomy.tokens - 1000)
    assert tight.tokens <= roomy.tokens - 1000 and "chars truncated" in tight.text
    assert tight.text.count("chars truncated") == 1  # only the long result lost its middle
    assert "w0 w1" in tight.text and "w2999" in tight.text  # head and tail of it kept
    assert "I will inspect the pods (step 3)." in tight.text and not tight.compacted
    assert render(run, budget=roomy.tokens - 1000).text == tight.text  # deterministic


def test_a_hard_field_cap_still_applies_when_configured() -> None:
    run = make_run(2, secret=False)
    run.steps[1].tool_result = "x" * 2000
    assert "[1700 chars truncated]" in render(run, field_max_chars=300).text
