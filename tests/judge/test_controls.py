"""Budget, circuit breaker, cache and sampling policy, with a controllable clock."""

from __future__ import annotations

from mast_otel.processors.config import JudgeConfig
from mast_otel.processors.judge.breaker import CircuitBreaker
from mast_otel.processors.judge.spending import Budget
from mast_otel.processors.judge.cache import VerdictCache, cache_key
from mast_otel.processors.judge.selection import judge_reason, sampled
from mast_otel.processors.judge.schema import Assessment
from mast_otel.processors.model import Diagnosis, Finding


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_token_budget_refuses_then_frees_after_a_minute() -> None:
    clock = Clock()
    budget = Budget(tokens_per_minute=1000, usd_per_hour=100, clock=clock)
    first = budget.try_reserve(600, 0.0)
    assert first is not None
    assert budget.try_reserve(600, 0.0) is None
    assert 59 < budget.wait_time(600, 0.0) <= 60
    budget.settle(first, 300, 0.0)  # the request used less than estimated
    assert budget.try_reserve(600, 0.0) is not None
    clock.now += 61
    assert budget.try_reserve(900, 0.0) is not None


def test_dollar_budget_spans_an_hour_and_oversized_requests_never_fit() -> None:
    clock = Clock()
    budget = Budget(tokens_per_minute=10**9, usd_per_hour=1.0, clock=clock)
    assert budget.try_reserve(10, 0.8) is not None
    clock.now += 1800
    assert budget.try_reserve(10, 0.3) is None
    clock.now += 1801
    assert budget.try_reserve(10, 0.3) is not None
    assert not budget.fits_ever(10, 1.5)


def test_breaker_opens_after_consecutive_failures_and_half_opens_for_one_trial() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=3, reset_seconds=30, clock=clock)
    for _ in range(2):
        breaker.record_failure()
    breaker.record_success()  # resets the count
    for _ in range(3):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    clock.now += 31
    assert breaker.allow() and not breaker.allow()  # one trial at a time
    breaker.record_failure()
    assert breaker.state == "open"
    clock.now += 31
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow() and breaker.allow()


def test_cache_is_a_bounded_lru() -> None:
    cache = VerdictCache(max_entries=2)
    value = Assessment.model_construct(modes=[])
    keys = [cache_key("m", str(i)) for i in range(3)]
    cache.put(keys[0], value)
    cache.put(keys[1], value)
    assert cache.get(keys[0]) is value  # now most recent
    cache.put(keys[2], value)
    assert cache.get(keys[1]) is None and cache.get(keys[0]) is value and len(cache) == 2
    assert cache_key("a", "bc") != cache_key("ab", "c")
    disabled = VerdictCache(0)
    disabled.put(keys[0], value)
    assert disabled.get(keys[0]) is None


def _diagnosis(trace_id: str, *, outcome=None, fatal=False, source="rules") -> Diagnosis:
    findings = [Finding("FM-3.1", 0.9, "x", ("a",), source=source)] if fatal else []
    return Diagnosis(trace_id=trace_id, findings=findings, fatal=fatal, outcome=outcome)


def test_policy_judges_failures_fatal_rule_findings_and_a_stable_sample() -> None:
    config = JudgeConfig(sample_rate=0.25)
    assert judge_reason(_diagnosis("t1", outcome="failure"), config) == "failure"
    assert judge_reason(_diagnosis("t2", fatal=True), config) == "fatal"
    assert judge_reason(_diagnosis("t2", fatal=True, source="judge"), config) != "fatal"
    off = config.model_copy(update={"judge_failed_runs": False, "judge_fatal_runs": False, "sample_rate": 0.0})
    assert judge_reason(_diagnosis("t1", outcome="failure", fatal=True), off) is None
    ids = [f"{i:032x}" for i in range(4000)]
    picked = [t for t in ids if sampled(t, 0.25)]
    assert 800 < len(picked) < 1200
    assert picked == [t for t in ids if sampled(t, 0.25)]  # deterministic
    assert all(sampled(t, 1.0) for t in ids[:10]) and not any(sampled(t, 0.0) for t in ids[:10])
