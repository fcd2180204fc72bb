"""Which runs the judge reads: failed runs, runs the rules found fatal, and a sample of the rest.

Sampling is deterministic by trace id, so every replica (and every re-diagnosis) makes the
same choice for the same run. On-demand requests bypass this policy.
"""

from __future__ import annotations

import hashlib

from mast_otel.processors.config import JudgeConfig
from mast_otel.processors.model import Diagnosis


def sampled(trace_id: str, rate: float) -> bool:
    """True for a stable ``rate`` fraction of trace ids."""
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    bucket = int.from_bytes(hashlib.sha256(trace_id.encode()).digest()[:8], "big")
    return bucket / 2**64 < rate


def judge_reason(diagnosis: Diagnosis, config: JudgeConfig) -> str | None:
    """Why this run should be judged (``failure``, ``fatal``, ``sampled``), or ``None``."""
    if config.judge_failed_runs and diagnosis.outcome == "failure":
        return "failure"
    if config.judge_fatal_runs and diagnosis.fatal and any(f.source == "rules" for f in diagnosis.findings):
        return "fatal"
    if sampled(diagnosis.trace_id, config.sample_rate):
        return "sampled"
    return None
