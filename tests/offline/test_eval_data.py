"""``eval`` keeps every record, checks its labels before calling anything accuracy, and reads
the framework corpus as a labelled data set."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mast_otel.processors import taxonomy
from mast_otel.processors.cli import main
from mast_otel.processors.offline.label_checks import LabelRow, check_labels

ROOT = Path(__file__).resolve().parents[2]
AG2 = ROOT.parent / "shared" / "eval" / "mast-ag2" / "records.json"
CORPUS = ROOT / "tests" / "frameworks" / "corpus"
SHORT = [m.removeprefix("FM-") for m in taxonomy.MODE_IDS]


def record(model: str, key: int, task: str, labels: dict[str, int], looping: bool) -> dict:
    steps = [{"agent": "user", "kind": "message", "content": task}]
    reads = 4 if looping else 1
    for _ in range(reads):
        steps += [{"agent": "solver", "kind": "tool_call", "tool": "search", "arguments": {"q": task}},
                  {"agent": "solver", "kind": "tool_result", "content": f"notes on {task}"}]
    steps.append({"agent": "solver", "kind": "message", "content": f"The answer to {task} is 42."})
    return {"steps": steps, "metadata": {"trace_id": key, "mas_name": "Team", "llm_name": model, "task": task,
                                         "mast_annotation": {m: labels.get(m, 0) for m in SHORT}}}


def two_model_file(tmp_path: Path, n: int = 230) -> Path:
    """``n`` distinct records of two models whose ``trace_id`` restarts at 0 for the second."""
    rng = random.Random(7)
    half = n // 2
    records = []
    for i in range(n):
        model, key = ("model-a", i) if i < half else ("model-b", i - half)
        looping = rng.random() < 0.3
        records.append(record(model, key, f"task {i}", {"1.3": int(looping) if rng.random() < 0.9 else 1 - looping}, looping))
    path = tmp_path / "two_models.json"
    path.write_text(json.dumps(records))
    return path


def test_every_record_is_a_run_even_when_trace_ids_restart(tmp_path, capsys) -> None:
    path = two_model_file(tmp_path)
    assert main(["eval", str(path), "--format", "json", "--resamples", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["input"]["records"] == 230 and out["runs"] == 230 and out["scored_runs"] == 230
    assert out["input"]["duplicates"] == [] and out["accuracy"] is True
    assert main(["analyze", str(path), "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["runs"]) == 230


def test_a_true_duplicate_is_kept_once_and_named(tmp_path, capsys) -> None:
    records = json.loads(two_model_file(tmp_path, 20).read_text())
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(records + [records[3]]))
    assert main(["eval", str(path), "--resamples", "10"]) == 0
    text = capsys.readouterr().out
    assert "21 step-list records read, 20 runs, 1 true duplicates kept once" in text
    assert f"{path}:1 record 20: the same record as {path}:1 record 3" in text


def rows_aligned_by_position(n: int = 40) -> list[LabelRow]:
    rng = random.Random(3)
    vectors = [tuple(rng.random() < 0.3 for _ in range(14)) for _ in range(n)]
    return [LabelRow(group, i, f"{group} task {i}", vectors[i]) for group in ("a", "b", "c") for i in range(n)]


def test_label_vectors_repeated_by_position_are_suspect() -> None:
    report = check_labels(rows_aligned_by_position(), taxonomy.MODE_IDS)
    assert {c.name for c in report.suspect} == {"repeated_sequences"}


def test_labels_that_follow_position_rather_than_task_are_suspect() -> None:
    rows = rows_aligned_by_position()
    # the same tasks in groups b and c, at shuffled positions: their labels differ from a's at the task
    shuffled = list(range(40))
    random.Random(5).shuffle(shuffled)
    rows = [r if r.group == "a" else LabelRow(r.group, r.order, f"a task {shuffled[r.order]}", r.vector) for r in rows]
    report = check_labels(rows, taxonomy.MODE_IDS)
    assert "labels_follow_position" in {c.name for c in report.suspect}


def test_independent_labels_pass_and_a_mode_on_every_record_is_suspect() -> None:
    rng = random.Random(11)
    rows = [LabelRow(g, i, f"{g} {i}", tuple(rng.random() < 0.3 for _ in range(14))) for g in "ab" for i in range(40)]
    assert check_labels(rows, taxonomy.MODE_IDS).suspect == []
    always = [LabelRow(r.group, r.order, r.task, (True,) + r.vector[1:]) for r in rows]
    report = check_labels(always, taxonomy.MODE_IDS)
    assert [c.name for c in report.suspect] == ["constant_columns"] and "FM-1.1" in report.suspect[0].detail


def test_suspect_labels_get_a_warning_and_no_figures_unless_accepted(tmp_path, capsys) -> None:
    records = []
    for g in ("x", "y"):
        for i, r in enumerate(json.loads(two_model_file(tmp_path, 30).read_text())):
            r["metadata"].update(mad_trace_key=g, trace_id=i, task=f"{g} {r['metadata']['task']}")
            records.append(r)
    path = tmp_path / "aligned.json"
    path.write_text(json.dumps(records))
    assert main(["eval", str(path)]) == 3
    captured = capsys.readouterr()
    assert "WARNING: suspect labels (repeated_sequences)" in captured.err and "precision" not in captured.out
    assert main(["eval", str(path), "--accept-suspect-labels", "--resamples", "10"]) == 0
    assert "NOT ACCURACY" in capsys.readouterr().out


@pytest.mark.skipif(not AG2.is_file(), reason="../shared/eval/mast-ag2 is not on this machine")
def test_the_mast_ag2_step_lists_get_the_label_warning(capsys) -> None:
    assert main(["eval", str(AG2), "--format", "json"]) == 3
    captured = capsys.readouterr()
    assert "WARNING: suspect labels (repeated_sequences)" in captured.err
    out = json.loads(captured.out)
    assert out["input"]["records"] == 597 and out["input"]["runs"] == 597 and out["input"]["duplicates"] == []


def test_the_framework_corpus_is_scored_per_mode_with_labels_from_its_scenarios(capsys) -> None:
    assert main(["eval", str(CORPUS), "--format", "json", "--resamples", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accuracy"] is True and out["runs"] >= 100
    # each rule mode is expected by some scenario, so each is scored with support
    for mode in ("FM-1.3", "FM-1.4", "FM-1.5", "FM-3.1", "FM-3.2", "FM-3.3"):
        assert out["modes"][mode]["support"] > 0 and out["modes"][mode]["recall_ci"] is not None
    # allowed modes are not counted: failed_check's FM-3.1 is neither a false nor a true positive
    failed_check_runs = out["runs"] // len(json.loads((CORPUS / "labels.json").read_text())["scenarios"])
    assert out["modes"]["FM-3.1"]["tp"] + out["modes"]["FM-3.1"]["fp"] + out["modes"]["FM-3.1"]["fn"] \
        + out["modes"]["FM-3.1"]["tn"] < out["runs"] and failed_check_runs > 0


def test_a_constant_judge_scores_kappa_zero_through_eval(tmp_path, capsys, monkeypatch) -> None:
    """``eval --judge`` end to end (litellm's mock response, no network): a judge that always
    answers FM-1.3 and FM-3.3 agrees with nothing beyond chance, on every mode and in the macro."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # eval checks the provider's key before judging
    answer = {"modes": [{"mode": m, "detected": m in ("FM-1.3", "FM-3.3"), "confidence": 0.9, "steps": [],
                         "rationale": "constant"} for m in taxonomy.MODE_IDS]}
    cfg = tmp_path / "judge.yaml"
    cfg.write_text(json.dumps({"judge": {"extra_params": {"mock_response": json.dumps(answer)}, "cache_size": 0,
                                         "tokens_per_minute": 10**9, "usd_per_hour": 10**6}}))
    rng = random.Random(2)
    records = [record("model-a", i, f"task {i}", {"1.1": int(rng.random() < 0.3), "1.3": int(rng.random() < 0.4),
                                                  "2.6": int(rng.random() < 0.5), "3.3": int(rng.random() < 0.2)},
                      looping=False) for i in range(40)]
    path = tmp_path / "labelled.json"
    path.write_text(json.dumps(records))
    assert main(["eval", str(path), "--judge", "gpt-4o-mini", "--config", str(cfg), "--format", "json",
                 "--resamples", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"] == "judge" and out["judge_prompt_version"] == "prompt-3.schema-1" and out["scored_runs"] == 40
    scored = {m: c for m, c in out["modes"].items() if c["scored"]}
    assert {"FM-1.1", "FM-1.3", "FM-2.6", "FM-3.3"} <= set(scored)
    assert all(c["kappa"] == pytest.approx(0.0) for c in scored.values())
    assert out["macro"]["kappa"] == pytest.approx(0.0) and "micro" not in out
