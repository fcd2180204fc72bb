"""``mast-otel analyze`` and ``mast-otel eval`` end to end on fixture files."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from mast_otel.processors.cli import main

FIXTURE = str(Path(__file__).parent.parent / "fixtures" / "runs" / "sre_steplist.json")


def test_analyze_json_counts_modes_per_model(capsys) -> None:
    assert main(["analyze", FIXTURE, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["modes"] for r in out["runs"]] == [["FM-1.3", "FM-1.5"], ["FM-3.2"], [], ["FM-1.2", "FM-3.1"]]
    a, b = out["models"]["model-a"], out["models"]["model-b"]
    assert (a["runs"], a["modes_per_run"], a["modes_per_failed_run"], a["fatal_share"]) == (2, 1.5, 2.0, 0.5)
    assert b["prevalence"]["FM-1.2"] == 0.5 and b["top_modes"] == ["FM-1.2", "FM-3.1"]
    overall = out["overall"]["prevalence_by_outcome"]
    assert overall["FM-3.2"] == {"failure": 0.0, "success": 0.5}
    assert overall["FM-1.3"] == {"failure": 0.5, "success": 0.0}
    finding = out["runs"][0]["findings"][0]
    assert finding["evidence_span_ids"] and "get_pods" in finding["explanation"]


def test_analyze_table_is_readable(capsys) -> None:
    assert main(["analyze", FIXTURE]) == 0
    out = capsys.readouterr().out
    assert "modes/failed run" in out and "FM-1.2, FM-3.1" in out
    assert [line.split()[0] for line in out.splitlines() if line.startswith("model-")] == ["model-a", "model-b"]


class _Bars(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.bars: list[dict[str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)
        if tag == "rect":
            self.bars.append(dict(attrs))


def test_analyze_html_is_self_contained_and_matches_the_json(tmp_path, capsys) -> None:
    report = tmp_path / "report.html"
    assert main(["analyze", FIXTURE, "--format", "html", "--output", str(report)]) == 0
    main(["analyze", FIXTURE, "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    html = report.read_text()
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    parser = _Bars()
    parser.feed(html)
    assert parser.tags.count("svg") == 3
    bars = {(b["data-group"], b["data-series"]): b["data-value"] for b in parser.bars}
    assert float(bars[("FM-1.3 Step repetition", "model-a")]) == data["models"]["model-a"]["prevalence"]["FM-1.3"]
    assert float(bars[("model-b", "per failed run")]) == data["models"]["model-b"]["modes_per_failed_run"]
    assert float(bars[("FM-3.2 No or incomplete verification", "success")]) == 0.5


def test_eval_json_scores_rules_against_labels(capsys) -> None:
    assert main(["eval", FIXTURE, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"] == "rules" and out["runs"] == 4
    assert out["modes"]["FM-1.3"]["tp"] == 1 and out["modes"]["FM-1.3"]["fp"] == 0
    assert out["modes"]["FM-3.2"]["precision"] == 1.0
    assert "FM-2.3" not in out["macro_modes"] and "micro" not in out
    assert out["input"]["records"] == 4 and out["accuracy"] is True


def test_eval_with_threshold_config_changes_the_scores(tmp_path, capsys) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("detection:\n  disabled_modes: ['FM-1.3']\n")
    assert main(["eval", FIXTURE, "--format", "json", "--config", str(cfg)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["modes"]["FM-1.3"]["predicted"] == 0 and out["modes"]["FM-1.3"]["fn"] == 1


def test_errors_are_reported_not_raised(tmp_path, capsys) -> None:
    assert main(["analyze", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err
    unlabelled = tmp_path / "u.json"
    unlabelled.write_text(json.dumps({"steps": [{"agent": "a", "kind": "message", "content": "hi"}]}))
    assert main(["eval", str(unlabelled)]) == 2
    assert "no labelled runs" in capsys.readouterr().err


def test_analyze_html_draws_shares_to_100_percent_and_folds_unseen_modes(tmp_path, capsys) -> None:
    report = tmp_path / "report.html"
    assert main(["analyze", FIXTURE, "--format", "html", "--output", str(report)]) == 0
    parser = _Bars()
    html = report.read_text()
    parser.feed(html)
    share = [b for b in parser.bars if b["data-series"] in ("model-a", "model-b", "failure", "success")]
    full = 420  # the chart's width: a share of 1.0
    assert all(float(b["width"]) == round(full * float(b["data-value"]), 1) for b in share)
    groups = {b["data-group"] for b in share}
    assert "FM-2.1 Conversation reset" not in groups and "Found in no run: FM-1.1" in html
    assert "<th>runs with a fatal-rated mode</th>" in html and "<td>50%</td>" in html
    longest = max(groups, key=len)
    svg = html.split(longest)[0].rsplit("<svg", 1)[1]
    x = float(svg.rsplit('x="', 1)[1].split('"')[0])
    assert x >= len(longest) * 6  # the label's text, right-aligned at x, fits left of it


def test_analyze_says_what_it_read_in_the_files_units(capsys) -> None:
    """Spans files are counted as spans and traces, step lists as records (not traces as records)."""
    spans_file = "tests/frameworks/corpus/strands/poll.json"
    assert main(["analyze", spans_file, "--format", "json"]) == 0
    read = json.loads(capsys.readouterr().out)["input"]
    assert (read["records"], read["traces"], read["runs"]) == (0, 1, 1) and read["spans"] > 1
    assert read["summary"].startswith(f"{read['spans']} spans of 1 trace read, 1 runs")
    assert main(["analyze", FIXTURE, spans_file]) == 0
    assert capsys.readouterr().out.startswith(f"4 step-list records and {read['spans']} spans of 1 trace read, 5 runs")
