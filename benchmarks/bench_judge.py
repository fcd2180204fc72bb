"""What the LLM judge costs per run: prompt tokens before and after rendering, and its overhead.

    .venv/bin/python benchmarks/bench_judge.py [--records PATH] [--model gpt-4o-mini] [--repeat 60] [--no-write]

Tokens: every run of the MAST-Data AG2 records, counted with the judge model's tokenizer.
"Before" is the whole trace as a plain transcript (every step's text in full, as an offline
judge that reads the raw log would send it); "after" is the judge's user message: redacted,
texts kept whole with their lines unless the run's budget needs them cut, repeated texts
referenced, within ``judge.prompt_token_budget``; how many characters were cut is counted
from the markers. The previous rendering (prompt version 1: each text on one line, cut at 800
characters whatever the budget) is given beside it as measured by this script at commit
618a757. The instructions (system message, fixed per model) are reported on their own line.
The AG2 records are used for their traces only; their labels are not.

Overhead: the judge's own work per run (render + redact + validate the answer + map findings)
measured as a full ``Judge.judge`` round trip against the local OpenAI-compatible server
used by the tests, minus a bare ``litellm.completion`` round trip to the same server in the
same process (the baseline). Results go to docs/judge.md between the ``bench_judge`` markers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "judge"))  # the tests' local OpenAI-compatible server

from docblock import write_doc_block  # noqa: E402
from judge_support import JudgeServer  # noqa: E402

from mast_otel.processors.config import JudgeConfig  # noqa: E402
from mast_otel.processors.ingest.transcripts import runs_from_steplist  # noqa: E402
from mast_otel.processors.judge.engine import Judge  # noqa: E402
from mast_otel.processors.model import Run  # noqa: E402

DOC = ROOT / "docs" / "judge.md"
DEFAULT_RECORDS = ROOT.parent / "shared" / "eval" / "mast-ag2" / "records.json"  # the traces, not their labels


def transcript(run: Run) -> str:
    """The uncompacted baseline: the task, then every step's text in full."""
    parts = [run.hints.task or ""]
    for s in run.steps:
        parts += [s.input_text or "", s.output_text or "", s.tool_args or "", s.tool_result or ""]
    parts.append(run.hints.final_answer or "")
    return "\n".join(p for p in parts if p)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# Prompt version 1's rendering, measured with this script at commit 618a757 (gpt-4o-mini tokenizer).
V1 = {"after_median": 770, "after_p95": 1395, "after_max": 4482, "system_tokens": 832, "runs_cut": 578,
      "chars_cut": 1_032_888}
_CUT = re.compile(r"\[(\d+) chars truncated\]")


def token_figures(runs: list[Run], judge: Judge) -> dict[str, float]:
    before = [judge.count_tokens(transcript(r)) for r in runs]
    rendered = [judge.render(r, include_content=True) for r in runs]
    after = [r.tokens for r in rendered]
    cuts = [sum(int(n) for n in _CUT.findall(r.text)) for r in rendered]
    return {
        "runs_cut": sum(1 for c in cuts if c),
        "chars_cut": sum(cuts),
        "chars_total": sum(len(transcript(r)) for r in runs),
        "runs": len(runs),
        "before_median": statistics.median(before),
        "before_p95": percentile(before, 0.95),
        "before_max": max(before),
        "after_median": statistics.median(after),
        "after_p95": percentile(after, 0.95),
        "after_max": max(after),
        "compacted_runs": sum(r.compacted for r in rendered),
        "system_tokens": judge.system_tokens,
        "budget": judge.run_budget,
    }


def overhead(runs: list[Run], repeat: int) -> dict[str, float]:
    import litellm

    server = JudgeServer()
    server.thread.start()
    try:
        config = JudgeConfig(model="openai/bench-judge", api_base=server.api_base, api_key="bench", cache_size=0,
                             tokens_per_minute=10**9, usd_per_hour=10**6)
        judge = Judge(config)
        sample = runs[:repeat]
        judge.judge(sample[0])  # warm up both paths (imports, connection pool)
        bare_messages = [{"role": "user", "content": "S1 ping"}]
        litellm.completion(model=config.model, api_base=config.api_base, api_key="bench", messages=bare_messages)

        bare, full, render = [], [], []
        for run in sample:  # interleaved, so drift on a shared machine hits all three alike
            t0 = time.perf_counter()
            litellm.completion(model=config.model, api_base=config.api_base, api_key="bench", messages=bare_messages,
                               max_retries=0, num_retries=0)
            t1 = time.perf_counter()
            outcome = judge.judge(run)
            t2 = time.perf_counter()
            judge.render(run, include_content=True)
            t3 = time.perf_counter()
            assert outcome.status == "ok", (outcome.status, outcome.message)
            bare.append(t1 - t0)
            full.append(t2 - t1)
            render.append(t3 - t2)
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    ms = lambda values: statistics.median(values) * 1e3  # noqa: E731
    return {"runs": len(sample), "bare_ms": ms(bare), "judge_ms": ms(full), "overhead_ms": ms(full) - ms(bare),
            "render_ms": ms(render)}


TIGHT_BUDGET = 3000


def markdown(model: str, tokens: dict[str, float], cost: dict[str, float], tight: dict[str, float]) -> str:
    t, c = tokens, cost
    ratio = lambda a, b: f"{a / b:.2f}" if b else "-"  # noqa: E731
    return "\n".join([
        f"Judge model tokenizer: `{model}`; {t['runs']} runs; run budget {t['budget']} tokens "
        f"(prompt budget minus the {t['system_tokens']}-token instructions).",
        "",
        "| prompt tokens per run | median | p95 | max |",
        "|---|---|---|---|",
        f"| whole transcript (what a raw-log judge sends) | {t['before_median']:.0f} | {t['before_p95']:.0f} | {t['before_max']:.0f} |",
        f"| judge's run text, prompt version 1 (one line per text, 800 characters each) | {V1['after_median']} | "
        f"{V1['after_p95']} | {V1['after_max']} |",
        f"| judge's run text, now (lines kept, cut only to fit the run's budget) | {t['after_median']:.0f} | "
        f"{t['after_p95']:.0f} | {t['after_max']:.0f} |",
        f"| now / whole transcript | {ratio(t['after_median'], t['before_median'])} | {ratio(t['after_p95'], t['before_p95'])} | "
        f"{ratio(t['after_max'], t['before_max'])} |",
        "",
        f"Instructions (system message): {t['system_tokens']} tokens now (MAST definitions, the 3.2/3.3 split, "
        f"worked examples), {V1['system_tokens']} in prompt version 1.",
        "",
        f"Text cut: {t['runs_cut']} runs, {t['chars_cut']:,} of {t['chars_total']:,} characters now; prompt version 1 "
        f"cut {V1['runs_cut']} runs, {V1['chars_cut']:,} characters, although no run was over its budget. "
        f"Runs that needed middle steps dropped or shortened to fit the budget: {t['compacted_runs']}.",
        "",
        f"With a {TIGHT_BUDGET:,}-token prompt budget (run budget {tight['budget']}): median {tight['after_median']:.0f}, "
        f"p95 {tight['after_p95']:.0f}, max {tight['after_max']:.0f} tokens; {tight['runs_cut']} runs had their longest "
        f"texts cut ({tight['chars_cut']:,} characters), {tight['compacted_runs']} also lost middle steps.",
        "",
        f"| per run, median of {c['runs']} runs (local mock server) | ms |",
        "|---|---|",
        f"| bare litellm round trip (baseline) | {c['bare_ms']:.1f} |",
        f"| full judge round trip | {c['judge_ms']:.1f} |",
        f"| judge overhead (difference) | {c['overhead_ms']:.1f} |",
        f"| of which render + redact + count tokens | {c['render_ms']:.1f} |",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=Path, default=DEFAULT_RECORDS)
    parser.add_argument("--model", default="gpt-4o-mini", help="judge model whose tokenizer and budget are used")
    parser.add_argument("--repeat", type=int, default=60, help="runs timed for the overhead figures")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/judge.md alone")
    args = parser.parse_args()

    runs = runs_from_steplist(json.loads(args.records.read_text()))
    tokens = token_figures(runs, Judge(JudgeConfig(model=args.model)))
    tight = token_figures(runs, Judge(JudgeConfig(model=args.model, prompt_token_budget=TIGHT_BUDGET)))
    cost = overhead(runs, args.repeat)
    body = markdown(args.model, tokens, cost, tight)
    print(body)
    if not args.no_write:
        write_doc_block("bench_judge", body, DOC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
