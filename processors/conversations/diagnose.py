"""Session-level detection: the turns of one conversation in order, findings on the turns out.

One module per idea: ``history`` (FM-1.4, earlier turns missing from a turn's input),
``asked_again`` (FM-1.4, a question the user already answered asked again),
``repeated_calls`` (FM-1.3, a call redone turn after turn for the same result) and
``contradiction`` (FM-3.3, a claim against an earlier turn's failed check). Each finding is
anchored on the first turn that shows it, so a diagnosis revised as turns arrive keeps it where
it was: later turns only add evidence or new findings.
"""

from __future__ import annotations

from collections.abc import Sequence

from mast_otel.processors.conversations.asked_again import asked_again
from mast_otel.processors.conversations.contradiction import contradicted_checks
from mast_otel.processors.conversations.history import lost_history
from mast_otel.processors.conversations.model import SessionFinding, Turn
from mast_otel.processors.conversations.repeated_calls import repeated_calls
from mast_otel.processors.conversations.settings import SessionDetectionConfig
from mast_otel.processors.conversations.turn_view import view_of

_DEFAULT = SessionDetectionConfig()


def diagnose_session(turns: Sequence[Turn], config: SessionDetectionConfig | None = None) -> list[SessionFinding]:
    """Cross-turn findings for a session whose turns are given in start order (pure: no I/O)."""
    if len(turns) < 2:
        return []
    config = config or _DEFAULT
    ordered = sorted(turns, key=lambda t: t.started_ns)  # stable: turns that start together keep the given order
    views = [view_of(i, turn) for i, turn in enumerate(ordered)]
    lost = lost_history(views, config)
    covered = {ref.trace_id for f in lost for ref in f.evidence}  # turns a lost-history finding already shows
    findings = lost + asked_again(views, config, covered) + repeated_calls(views, config)
    if config.contradicted_checks:
        findings += contradicted_checks(views, config)
    return findings
