"""What the LLM judge costs per run: prompt tokens before and after compaction, and its overhead.

    .venv/bin/python benchmarks/bench_judge.py [--records PATH] [--model gpt-4o-mini] [--repeat 60] [--no-write]

Tokens: every run of the MAST-Data AG2 records, counted with the judge model's tokenizer.
"Before" is the whole trace as a plain transcript (every step's text in full, as an offline
judge that reads the raw log would send it); "after" is the judge's user message: redacted,
fields cut with markers, repeated texts referenced, within ``judge.prompt_token_budget``. The
instructions (system message, fixed per model) are reported on their own line.

Overhead: the judge's own work per run (render + redact + validate the answer + map findings)
measured as a full ``Judge.judge`` round trip against the local OpenAI-compatible server
used by the tests, minus a bare ``litellm.completion`` round trip to the same server in the
same process (the baseline). Results go to docs/judge.md between the ``bench_judge`` markers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "judge"))  # the tests' local OpenAI-compatible server

from bench_accuracy import DEFAULT_RECORDS  # noqa: E402
from docblock import write_doc_block  # noqa: E402
from judge_support import JudgeServer  # noqa: E402

from mast_otel.processors.config import JudgeConfig  # noqa: E402
from mast_otel.processors.ingest.steplist import runs_from_steplist  # noqa: E402
from mast_otel.processors.judge.engine import Judge  # noqa: E402
from mast_otel.processors.model import Run  # noqa: E402

DOC = ROOT / "docs" / "judge.md"


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


def token_figures(runs: list[Run], judge: Judge) -> dict[str, float]:
    before = [judge.count_tokens(transcript(r)) for r in runs]
    rendered = [judge.render(r, include_content=True) for r in runs]
    after = [r.tokens for r in rendered]
    return {
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


def markdown(model: str, tokens: dict[str, float], cost: dict[str, float]) -> str:
    t, c = tokens, cost
    ratio = lambda a, b: f"{a / b:.2f}" if b else "-"  # noqa: E731
    return "\n".join([
        f"Judge model tokenizer: `{model}`; {t['runs']} runs; run budget {t['budget']} tokens "
        f"(prompt budget minus the {t['system_tokens']}-token instructions).",
        "",
        "| prompt tokens per run | median | p95 | max |",
        "|---|---|---|---|",
        f"| before compaction (whole transcript) | {t['before_median']:.0f} | {t['before_p95']:.0f} | {t['before_max']:.0f} |",
        f"| after compaction (judge's run text) | {t['after_median']:.0f} | {t['after_p95']:.0f} | {t['after_max']:.0f} |",
        f"| after / before | {ratio(t['after_median'], t['before_median'])} | {ratio(t['after_p95'], t['before_p95'])} | "
        f"{ratio(t['after_max'], t['before_max'])} |",
        "",
        f"Runs that needed middle steps dropped or shortened to fit the budget: {t['compacted_runs']}.",
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
    cost = overhead(runs, args.repeat)
    body = markdown(args.model, tokens, cost)
    print(body)
    if not args.no_write:
        write_doc_block("bench_judge", body, DOC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
