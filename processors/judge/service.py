"""The judge beside the streaming path: a consumer of diagnosed runs, a bounded queue, its own workers.

The judge trigger (an exporter of the merge stage) calls :meth:`JudgeService.on_diagnosis`,
which only applies the policy and enqueues (never blocks): when the queue is full the run is
skipped and counted. Workers judge runs and feed findings back through the merge stage's
typed input (``FindingsInput.apply_findings``), which stores, counts, annotates and
re-exports them like rule findings. A slow or failing judge never delays ingest or rules.

Completed sessions (``submit_session``, from the sessions exporter) go through the same queue,
workers, budget, breaker and cache: a worker reads the session's turns from its
:class:`SessionSource`, judges them together (``conversations.judge.judge_session``) and hands
back the cross-turn findings.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, Sequence

from mast_otel.processors.config import JudgeConfig
from mast_otel.processors.conversations.judge import judge_session, max_turns
from mast_otel.processors.conversations.model import SessionFinding, Turn
from mast_otel.processors.judge import client as outcomes
from mast_otel.processors.judge.cache import SharedVerdicts
from mast_otel.processors.judge.engine import Judge, JudgeOutcome
from mast_otel.processors.judge.selection import judge_reason
from mast_otel.processors.model import Diagnosis, Run
from mast_otel.processors.service.pipeline.assembler import run_bytes
from mast_otel.processors.service.memory.account import Charge, MemoryAccount

if TYPE_CHECKING:
    from mast_otel.processors.service.pipeline.merge import FindingsInput, RunSource
    from mast_otel.processors.service.telemetry.metrics import Metrics

log = logging.getLogger(__name__)

ON_DEMAND = "on_demand"
NOT_FOUND = "not_found"
TOO_FEW_TURNS = "too_few_turns"  # a session job whose session no longer has two turns: nothing to judge
_REMEMBERED_TRACES = 50_000  # trace ids whose judged content is remembered (de-duplication)


@dataclass(slots=True)
class _Job:
    trace_id: str
    run: Run | None  # None: look it up when the job runs
    reason: str
    nbytes: int  # what ``run`` holds, charged to the memory account while queued
    future: Future = field(default_factory=Future)


@dataclass(slots=True)
class _SessionJob:
    session_id: str
    future: Future = field(default_factory=Future)
    nbytes: int = 0  # an id only: the turns are read when the job runs


class SessionSource(Protocol):
    """Where session jobs read a session's turns and keep the judge's findings (the sessions exporter)."""

    def session_turns(self, session_id: str, limit: int) -> list[Turn]: ...

    def apply_judge_findings(self, session_id: str, findings: Sequence[SessionFinding]) -> int | None: ...


def _fingerprint(run: Run) -> tuple[int, int]:
    """Changes when spans arrive late, not when judge findings are merged (which do not add spans)."""
    return len(run.spans), max((s.end_ns for s in run.spans), default=0)


class JudgeService:
    """Judges runs asynchronously: reads held runs from ``runs``, feeds findings to ``findings``
    (default: ``runs``, when it is also the merge stage's input, as the pipeline is)."""

    def __init__(self, config: JudgeConfig, runs: RunSource, metrics: Metrics | None, *,
                 findings: FindingsInput | None = None, judge: Judge | None = None,
                 shared_verdicts: SharedVerdicts | None = None, memory: MemoryAccount | None = None,
                 sessions: SessionSource | None = None) -> None:
        self.config = config
        self.runs = runs
        self.findings: FindingsInput = findings if findings is not None else runs  # type: ignore[assignment]
        self.metrics = metrics
        self.sessions = sessions  # completed sessions are judged when given
        self._judge = judge
        self._shared_verdicts = shared_verdicts
        self._queue: queue.Queue[_Job | _SessionJob | None] = queue.Queue(maxsize=config.max_queue)
        # the runs queued (their spans may outlive retention while they wait), charged to the memory account
        self.queued = memory.charge("judge_queue") if memory is not None else Charge("judge_queue")
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._judged: OrderedDict[str, tuple[int, int]] = OrderedDict()
        self._running = False

    @property
    def judge(self) -> Judge:
        if self._judge is None:
            raise RuntimeError("JudgeService.start() has not been called")
        return self._judge

    @property
    def model(self) -> str:
        return self.config.model or "none"

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._running:
            return
        if self._judge is None:
            self._judge = Judge(self.config, shared_verdicts=self._shared_verdicts)
        missing = self._judge.client.missing_credentials()
        if missing:  # started anyway: the variable may be set for a restart, and rules go on alone
            log.warning("LLM judge model %s needs %s, not set and no judge.api_key: every judged run will fail "
                        "(counted in mast_judge_requests_total) until it is", self.model, ", ".join(missing))
        self._running = True
        for i in range(self.config.max_concurrency):
            worker = threading.Thread(target=self._work, name=f"mast-judge-{i}", daemon=True)
            worker.start()
            self._workers.append(worker)
        log.info("LLM judge started: model %s, %d workers", self.model, len(self._workers))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the workers; queued runs that have not started are abandoned."""
        if not self._running:
            return
        self._running = False
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                self.queued.add(-job.nbytes)
                job.future.cancel()
        for _ in self._workers:
            self._queue.put(None)
        for worker in self._workers:
            worker.join(timeout)
        self._workers.clear()

    def __enter__(self) -> JudgeService:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- intake ------------------------------------------------------------------------------
    def on_diagnosis(self, run: Run, diagnosis: Diagnosis) -> None:
        """Enqueue a diagnosed run the policy selects, each content version once (the judge trigger calls this)."""
        reason = judge_reason(diagnosis, self.config)
        if reason is None:
            return
        version = _fingerprint(run)
        with self._lock:
            if self._judged.get(run.trace_id) == version:
                return  # already judged (or queued) as it is now; e.g. our own findings merged
            self._judged[run.trace_id] = version
            self._judged.move_to_end(run.trace_id)
            while len(self._judged) > _REMEMBERED_TRACES:
                self._judged.popitem(last=False)
        self.submit(run.trace_id, run=run, reason=reason)

    def submit(self, trace_id: str, *, run: Run | None = None, reason: str = ON_DEMAND) -> Future | None:
        """Queue a run for judging; ``None`` when the queue is full (the run is skipped, counted)."""
        if not self._running:
            raise RuntimeError("the judge service is not running")
        job = _Job(trace_id, run, reason, run_bytes(run) if run is not None else 0)
        try:
            self._queue.put_nowait(job)
            self.queued.add(job.nbytes)
        except queue.Full:
            self._count(JudgeOutcome(outcomes.QUEUE_FULL))
            log.warning("judge queue full (%d runs); skipped trace %s", self.config.max_queue, trace_id)
            with self._lock:
                self._judged.pop(trace_id, None)  # let a later re-diagnosis try again
            return None
        return job.future

    def submit_session(self, session_id: str) -> Future | None:
        """Queue a completed session for judging (the sessions exporter calls this; never blocks);
        ``None`` when it is not judged: no session source, not running, or the queue full (counted)."""
        if self.sessions is None or not self._running:
            return None
        job = _SessionJob(session_id)
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            self._count(JudgeOutcome(outcomes.QUEUE_FULL))
            log.warning("judge queue full (%d jobs); skipped session %s", self.config.max_queue, session_id)
            return None
        return job.future

    # --- work --------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            self.queued.add(-job.nbytes)
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                job.future.set_result(self._process(job) if isinstance(job, _Job) else self._process_session(job))
            except Exception as exc:  # a bug must not kill the worker
                log.exception("judging %s failed", f"trace {job.trace_id}" if isinstance(job, _Job) else f"session {job.session_id}")
                job.future.set_exception(exc)

    def _process(self, job: _Job) -> JudgeOutcome:
        run = job.run or self.runs.get_run(job.trace_id)
        if run is None:
            return JudgeOutcome(NOT_FOUND, message="the run is no longer held by the processor")
        outcome = self.judge.judge(run)
        self._count(outcome)
        if outcome.status not in (outcomes.OK, outcomes.CACHED):
            log.info("judge skipped trace %s (%s): %s", job.trace_id, outcome.status, outcome.message)
        elif outcome.findings:
            self.findings.apply_findings(job.trace_id, outcome.findings)
        return outcome

    def _process_session(self, job: _SessionJob) -> JudgeOutcome:
        assert self.sessions is not None  # only queued with a source
        turns = self.sessions.session_turns(job.session_id, max_turns(self.judge))
        if len(turns) < 2:
            return JudgeOutcome(TOO_FEW_TURNS, message="fewer than two of the session's turns could be read")
        outcome, findings = judge_session(self.judge, turns)
        self._count(outcome)
        if not outcome.ok:
            log.info("judge skipped session %s (%s): %s", job.session_id, outcome.status, outcome.message)
        else:  # the latest judgement replaces the judge's earlier findings on the session, none included
            self.sessions.apply_judge_findings(job.session_id, findings)
        return outcome

    def _count(self, outcome: JudgeOutcome) -> None:
        m = self.metrics
        if m is None:
            return
        labels = (self.model, outcome.status)
        m.judge_requests_total.labels(*labels).inc()
        tokens = outcome.prompt_tokens + outcome.completion_tokens
        if tokens:
            m.judge_tokens_total.labels(*labels).inc(tokens)
        if outcome.cost_usd:
            m.judge_cost_usd_total.labels(*labels).inc(outcome.cost_usd)

    def router(self):
        """The on-demand endpoint, ``POST /v1/diagnoses/{trace_id}/judge``."""
        from mast_otel.processors.judge.api import build_router

        return build_router(self)
