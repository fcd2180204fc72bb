"""The judge over a session's turns, end to end through litellm's ``mock_response`` (no network)."""

from __future__ import annotations

import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mast_otel.processors import taxonomy  # noqa: E402
from mast_otel.processors.config import JudgeConfig  # noqa: E402
from mast_otel.processors.conversations.judge import judge_session, max_turns, render_session  # noqa: E402
from mast_otel.processors.judge import client  # noqa: E402
from mast_otel.processors.judge.engine import Judge  # noqa: E402

from .test_session_detection import FORGOT, PODS, USER_TURNS  # noqa: E402
from .turns import conversation, session  # noqa: E402


def answer(detected: dict[str, list[str]]) -> str:
    return json.dumps({"modes": [
        {"mode": m, "detected": m in detected, "confidence": 0.9 if m in detected else 0.1,
         "steps": detected.get(m, []), "rationale": "Shown." if m in detected else "Not shown."}
        for m in taxonomy.MODE_IDS]})


def judge_with(text: str, **overrides) -> Judge:
    return Judge(JudgeConfig(model="gpt-4o-mini", extra_params={"mock_response": text}, **overrides), sleep=lambda s: None)


def turns():
    specs = conversation(USER_TURNS, FORGOT, carried=False)
    specs[1].tools = [PODS]
    return session(specs)


def test_the_session_is_rendered_turn_by_turn_with_step_ids_per_turn():
    judge = judge_with(answer({}))
    rendered, refs = render_session(judge, turns(), include_content=True)
    assert [line for line in rendered.text.splitlines() if line.startswith("TURN ")] == ["TURN 1", "TURN 2", "TURN 3", "TURN 4"]
    assert {"T1.S1", "T2.S1", "T2.S2", "T2.S3", "T4.S1"} <= set(refs)
    assert "\nS1 " not in rendered.text and "\nT2.S2 " in rendered.text
    assert set(rendered.step_spans) == set(refs)


def test_cross_turn_verdicts_become_session_findings_on_the_second_cited_turn():
    session_turns = turns()
    judge = judge_with(answer({"FM-1.4": ["T1.S1", "T3.S1"], "FM-3.3": ["T2.S2"]}))
    outcome, findings = judge_session(judge, session_turns)
    assert outcome.status == client.OK
    (finding,) = findings  # FM-3.3 cites one turn only: that run's own diagnosis, not the session's
    assert finding.mode == "FM-1.4" and finding.source == "judge"
    assert finding.turn_trace_id == session_turns[2].trace_id
    assert [e.trace_id for e in finding.evidence] == [session_turns[0].trace_id, session_turns[2].trace_id]
    assert all(e.span_id in {s.span_id for s in t.run.spans} for e, t in zip(finding.evidence, [session_turns[0], session_turns[2]]))
    again, cached = judge_session(judge, session_turns)
    assert again.status == client.CACHED and cached == findings


def test_a_session_without_content_follows_the_structure_only_setting():
    specs = conversation(USER_TURNS, FORGOT, carried=False)
    outcome, findings = judge_session(judge_with(answer({"FM-1.4": ["T1.S1", "T2.S1"]}), allow_structure_only_runs=False),
                                      session(specs, content=False))
    assert outcome.status == client.NO_CONTENT and findings == []


def test_a_session_longer_than_the_prompt_budget_is_judged_on_its_latest_turns():
    session_turns = turns()
    judge = judge_with(answer({"FM-1.4": ["T1.S1", "T2.S1"]}), prompt_token_budget=256)  # room for two turns only
    assert max_turns(judge) == 2
    outcome, (finding,) = judge_session(judge, session_turns)
    assert outcome.status == client.OK
    assert "SESSION of 2 turns" in outcome.rendered.text
    assert [e.trace_id for e in finding.evidence] == [session_turns[2].trace_id, session_turns[3].trace_id]
