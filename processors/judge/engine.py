"""One judgement of one run, with every safeguard in order.

content policy -> render (redacted, within the model's prompt budget) -> cache -> budget ->
circuit breaker -> model call -> findings. Shared by the streaming service and offline
evaluation; neither repeats any of these steps.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable

from mast_otel.processors.config import JudgeConfig
from mast_otel.processors.judge import client as outcomes
from mast_otel.processors.judge.breaker import CircuitBreaker
from mast_otel.processors.judge.spending import Budget
from mast_otel.processors.judge.cache import SharedVerdicts, VerdictCache, cache_key
from mast_otel.processors.judge.client import JudgeClient, JudgeError
from mast_otel.processors.judge.prompt import PROMPT_VERSION, system_prompt, version
from mast_otel.processors.judge.redact import Redactor
from mast_otel.processors.judge.render import RenderedRun, TokenCounter, render_run, run_has_content
from mast_otel.processors.judge.schema import Assessment, to_findings
from mast_otel.processors.model import Finding, Run

log = logging.getLogger(__name__)

PROMPT_OVERHEAD_TOKENS = 64  # message framing that the token counter does not see


@dataclass(slots=True)
class JudgeOutcome:
    """What one judgement produced: findings when ``status`` is ok/cached, else why not."""

    status: str
    findings: list[Finding] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    message: str = ""
    rendered: RenderedRun | None = None
    assessment: Assessment | None = None  # the judge's answer, when ``ok`` (what ``findings`` came from)

    @property
    def ok(self) -> bool:
        return self.status in (outcomes.OK, outcomes.CACHED)

    def error(self) -> JudgeError:
        return JudgeError(
            self.status,
            self.message,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost_usd=self.cost_usd,
        )


def token_counter(model: str) -> TokenCounter:
    """Counts tokens with the judge model's tokenizer (litellm's local tables)."""
    import litellm

    return lambda text: litellm.token_counter(model=model, text=text)


def prompt_budget(config: JudgeConfig) -> int:
    """The configured prompt budget, lowered to fit the judge model's context window when known."""
    import litellm

    budget = config.prompt_token_budget
    try:
        window = litellm.get_model_info(config.model).get("max_input_tokens")
    except Exception:
        window = None
    if window:
        budget = min(budget, int(window) - config.max_output_tokens)
    return max(budget, 256)


class Judge:
    """Thread-safe: the service's workers share one instance (one budget, breaker and cache)."""

    def __init__(
        self,
        config: JudgeConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        shared_verdicts: SharedVerdicts | None = None,
    ) -> None:
        self.config = config
        self.redactor = Redactor(config.redaction_patterns)
        self.client = JudgeClient(config, sleep=sleep, scrub=self.redactor.redact)
        self.model = self.client.model
        self.count_tokens = token_counter(self.model)
        self.budget = Budget(config.tokens_per_minute, config.usd_per_hour, clock)
        self.breaker = CircuitBreaker(config.circuit_breaker_failures, config.circuit_breaker_reset_seconds, clock)
        self.cache = VerdictCache(config.cache_size, shared_verdicts)
        self._sleep = sleep
        system_tokens = self.count_tokens(system_prompt(self.client.schema_in_prompt)) + PROMPT_OVERHEAD_TOKENS
        self.system_tokens = system_tokens
        self.run_budget = max(prompt_budget(config) - system_tokens, 128)

    def render(self, run: Run, include_content: bool) -> RenderedRun:
        return render_run(
            run,
            budget_tokens=self.run_budget,
            count_tokens=self.count_tokens,
            redactor=self.redactor,
            include_content=include_content,
            field_max_chars=self.config.field_max_chars,
        )

    def judge(self, run: Run, *, wait_for_budget: bool = False) -> JudgeOutcome:
        """Judge one run. Never raises for provider or output trouble: see ``status``."""
        has_content = run_has_content(run)
        if not has_content and not self.config.allow_structure_only_runs:
            return JudgeOutcome(outcomes.NO_CONTENT, message="the run was captured without content")
        rendered = self.render(run, include_content=has_content and self.config.allow_content)
        outcome = self.assess(rendered, wait_for_budget=wait_for_budget)
        if outcome.assessment is not None:
            outcome.findings = self._findings(outcome.assessment, rendered, run)
        return outcome

    def assess(self, rendered: RenderedRun, *, wait_for_budget: bool = False) -> JudgeOutcome:
        """Judge rendered text (a run's, or a session's turns): cache, budget, breaker, call; the
        outcome carries the assessment, findings are the caller's to make. Never raises."""
        key = cache_key(self.model, PROMPT_VERSION, self.client.output_mode, rendered.text)
        cached = self.cache.get(key)
        if cached is not None:
            return JudgeOutcome(outcomes.CACHED, rendered=rendered, assessment=cached)

        est_tokens = self.system_tokens + rendered.tokens + self.config.max_output_tokens
        est_usd = self.client.estimate_usd(self.system_tokens + rendered.tokens, self.config.max_output_tokens)
        reservation = self._reserve(est_tokens, est_usd, wait_for_budget)
        if reservation is None:
            return JudgeOutcome(
                outcomes.OVER_BUDGET,
                message=f"needs ~{est_tokens} tokens and ${est_usd:.4f}; over the judge's budget",
                rendered=rendered,
            )
        if not self.breaker.allow():
            self.budget.settle(reservation, 0, 0.0)
            return JudgeOutcome(outcomes.CIRCUIT_OPEN, message="the judge provider keeps failing; circuit open", rendered=rendered)
        try:
            result = self.client.assess(rendered.text, rendered.step_spans.keys())
        except JudgeError as exc:
            if exc.status in outcomes.PROVIDER_FAILURES:
                self.breaker.record_failure()
            else:
                self.breaker.record_success()  # the provider answered; the answer was the problem
            self.budget.settle(reservation, exc.prompt_tokens + exc.completion_tokens, exc.cost_usd)
            return JudgeOutcome(
                exc.status,
                prompt_tokens=exc.prompt_tokens,
                completion_tokens=exc.completion_tokens,
                cost_usd=exc.cost_usd,
                message=exc.message,
                rendered=rendered,
            )
        self.breaker.record_success()
        usage = result.usage
        self.budget.settle(reservation, usage.prompt_tokens + usage.completion_tokens, usage.cost_usd)
        self.cache.put(key, result.assessment)
        return JudgeOutcome(
            outcomes.OK,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=usage.cost_usd,
            rendered=rendered,
            assessment=result.assessment,
        )

    def _reserve(self, tokens: int, usd: float, wait: bool):
        if not self.budget.fits_ever(tokens, usd):
            return None
        while True:
            reservation = self.budget.try_reserve(tokens, usd)
            if reservation is not None or not wait:
                return reservation
            delay = self.budget.wait_time(tokens, usd)
            log.info("judge budget exhausted; waiting %.1fs for room", delay)
            self._sleep(max(delay, 0.05))

    def _findings(self, assessment: Assessment, rendered: RenderedRun, run: Run) -> list[Finding]:
        return to_findings(
            assessment,
            rendered.step_spans,
            judge_model=self.model,
            min_confidence=self.config.min_confidence,
            fallback_span_id=run.root.span_id if run.root else None,
            prompt_version=version(),
        )
