"""Offline judging (``judge_runs``) and ``mast-otel eval --judge`` against the local server."""

from __future__ import annotations

import json

from judge_support import JudgeServer, make_run

from mast_otel.processors.cli import main
from mast_otel.processors.judge import client
from mast_otel.processors.judge.client import JudgeError
from mast_otel.processors.judge.engine import Judge
from mast_otel.processors.judge.batch import judge_runs


def test_results_come_back_in_order_with_errors_in_place(judge_server: JudgeServer, server_config) -> None:
    config = server_config.model_copy(update={"max_concurrency": 1})
    judge_server.script = ["ok", "unknown_step", "unknown_step", "ok"]
    runs = [make_run(n, trace_id=f"{n:032x}") for n in (2, 4, 6)]
    results = list(judge_runs(runs, config))
    assert [run.trace_id for run, _ in results] == [r.trace_id for r in runs]
    first, second, third = (r for _, r in results)
    assert {f.mode for f in first} == {"FM-2.3", "FM-3.3"}
    assert isinstance(second, JudgeError) and second.status == client.INVALID_OUTPUT
    assert str(second).startswith("invalid_output: ")
    assert third[0].evidence_span_ids[0] in {s.span_id for s in runs[2].spans}


def test_offline_judging_waits_for_budget_instead_of_skipping(judge_server: JudgeServer, server_config) -> None:
    class Clock:
        now = 0.0
        slept: list[float] = []

        def __call__(self) -> float:
            return self.now

        def sleep(self, seconds: float) -> None:
            self.slept.append(seconds)
            self.now += seconds

    clock = Clock()
    config = server_config.model_copy(update={"tokens_per_minute": 6000, "max_concurrency": 1, "cache_size": 0})
    judge = Judge(config, clock=clock, sleep=clock.sleep)
    runs = [make_run(4, trace_id=f"{n:032x}") for n in range(1, 5)]
    results = [r for _, r in judge_runs(runs, config, judge=judge)]
    assert all(isinstance(r, list) and r for r in results)
    assert len(judge_server.requests) == 4
    assert sum(clock.slept) >= 60  # at least one minute window had to pass


def test_eval_command_scores_the_judge(judge_server: JudgeServer, tmp_path, monkeypatch, capsys) -> None:
    def record(i: int, derailed: bool) -> dict:
        return {
            "steps": [
                {"agent": "planner", "content": f"Task {i}: compute the total of the invoices.", "kind": "message", "metadata": {"step_index": 0}},
                {"agent": "coder", "content": "print(sum([1, 2]))", "kind": "tool_call", "metadata": {"step_index": 1}},
                {"agent": "runner", "content": "3", "kind": "tool_result", "metadata": {"step_index": 2}},
                {"agent": "coder", "content": "The total is 3.", "kind": "message", "metadata": {"step_index": 3, "is_final_answer": True}},
            ],
            "metadata": {"trace_id": i, "mast_annotation": {m: 0 for m in ("1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.4", "2.5", "2.6", "3.1", "3.2")} | {"2.3": int(derailed), "3.3": 1}},
        }

    path = tmp_path / "records.json"
    path.write_text(json.dumps([record(1, True), record(2, False)]))
    monkeypatch.setenv("MAST_OTEL_JUDGE__API_KEY", "test-key-not-a-secret")
    code = main(["eval", str(path), "--judge", "openai/local-judge", "--judge-api-base", judge_server.api_base, "--format", "json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["source"] == "judge" and result["scored_runs"] == 2 and result["errors"] == {}
    assert len(judge_server.requests) == 2
    # the server flags FM-2.3 on every run: one true positive, one false positive
    assert result["modes"]["FM-2.3"]["precision"] == 0.5 and result["modes"]["FM-2.3"]["recall"] == 1.0
