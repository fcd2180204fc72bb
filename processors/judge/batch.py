"""Judge stored or exported runs in bulk, for ``mast-otel eval --judge MODEL`` and ``analyze``.

Every run is judged (no sampling); the budget is respected by waiting for room rather than
skipping, so an evaluation is complete however long it takes. Results come back in input
order, at most ``max_concurrency`` requests in flight.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterable, Iterator

from mast_otel.processors.config import JudgeConfig
from mast_otel.processors.judge.client import JudgeError
from mast_otel.processors.judge.engine import Judge
from mast_otel.processors.model import Finding, Run


def judge_runs(
    runs: Iterable[Run], config: JudgeConfig, *, judge: Judge | None = None
) -> Iterator[tuple[Run, list[Finding] | JudgeError]]:
    """Yield ``(run, findings)`` or ``(run, JudgeError)`` for each run, in order."""
    judge = judge or Judge(config)
    window: deque[tuple[Run, Future]] = deque()
    with ThreadPoolExecutor(max_workers=config.max_concurrency, thread_name_prefix="mast-judge") as pool:
        for run in runs:
            window.append((run, pool.submit(judge.judge, run, wait_for_budget=True)))
            if len(window) >= config.max_concurrency * 2:
                yield _result(*window.popleft())
        while window:
            yield _result(*window.popleft())


def _result(run: Run, future: Future) -> tuple[Run, list[Finding] | JudgeError]:
    outcome = future.result()
    return run, (outcome.findings if outcome.ok else outcome.error())
