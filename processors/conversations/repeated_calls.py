"""FM-1.3 across turns: the same tool call, same arguments, same result, turn after turn.

A lookup whose result is already in the conversation, redone every turn while nothing changed,
is work repeated for nothing. Each turn counts once per call (tool name and arguments hash); a
streak grows while each turn gets the same result hash as the one before. Near misses stay
quiet: a changed result (the data moved on) starts the streak afresh, and so does a user turn
that asks for a fresh look (its words, or an earlier question repeated word for word). Needs the
arguments and results hashes, so content capture (or ``mast.tool.*_hash``) on the tool calls.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from mast_otel.processors.conversations.model import SessionFinding, SpanRef
from mast_otel.processors.conversations.settings import SessionDetectionConfig
from mast_otel.processors.conversations.turn_view import TurnView
from mast_otel.processors.model import Run, Span

DETECTOR = "session_repetition"
MODE = "FM-1.3"
_NOT_REPEATS = frozenset({"clarify", "handoff"})  # asking the user, handing over: not lookups


@dataclass(slots=True)
class _Streak:
    result_hash: str
    first_turn: int
    repeats: list[tuple[TurnView, Span]] = field(default_factory=list)  # the turns after the first
    reported: bool = False


def repeated_calls(views: Sequence[TurnView], config: SessionDetectionConfig) -> list[SessionFinding]:
    """A finding per streak of ``repeat_min_turns`` turns making one call with one result, on the first repeat."""
    recheck = _recheck_pattern(config.recheck_words)
    streaks: dict[tuple[str, str], _Streak] = {}
    done: list[_Streak] = []
    asked: set[str] = set()  # the user messages so far, folded
    calls = [_calls(view) for view in views]
    # a call made in one turn only starts a streak that never grows: with the runs' shortcuts, only
    # the others are followed (the plain path follows every call, with the same findings)
    again: set[tuple[str, str]] | None = None
    if all(view.turn.run.shortcuts for view in views):
        made = Counter(key for turn_calls in calls for key in turn_calls)
        again = {key for key, turns in made.items() if turns > 1}
    for view, turn_calls in zip(views, calls):
        message = view.user_folded
        asked_again = message is not None and (message in asked or recheck.search(message) is not None)
        if message is not None:
            asked.add(message)
        if again is not None and again.isdisjoint(turn_calls):
            continue
        for key, span in turn_calls.items():
            if again is not None and key not in again:
                continue
            streak = streaks.get(key)
            if streak is None or streak.result_hash != span.result_hash or asked_again:
                if streak is not None and streak.reported:
                    done.append(streak)
                streaks[key] = _Streak(span.result_hash or "", view.index)
                continue
            streak.repeats.append((view, span))
            if len(streak.repeats) + 1 >= config.repeat_min_turns:
                streak.reported = True
    done.extend(s for s in streaks.values() if s.reported)
    return [_finding(s, config) for s in sorted(done, key=lambda s: s.repeats[0][0].index)]


def _calls(view: TurnView) -> dict[tuple[str, str], Span]:
    """The turn's first call of each (tool, arguments), when both hashes are known (kept with the
    run: each diagnosis of the session reads every turn again)."""
    run = view.turn.run
    return run.memo(_MEMO_KEY, lambda: _calls_of(run))


_MEMO_KEY = "session_repeated_calls"


def _calls_of(run: Run) -> dict[tuple[str, str], Span]:
    calls: dict[tuple[str, str], Span] = {}
    for span in run.tool_calls:
        if not span.tool_name or not span.args_hash or not span.result_hash or span.error or span.tool_kind in _NOT_REPEATS:
            continue
        calls.setdefault((span.tool_name, span.args_hash), span)
    return calls


def _finding(streak: _Streak, config: SessionDetectionConfig) -> SessionFinding:
    first_view, first_span = streak.repeats[0]
    turns = [v.index + 1 for v, _ in streak.repeats]
    evidence = tuple(SpanRef(v.trace_id, s.span_id) for v, s in streak.repeats)[: config.max_evidence]
    explanation = (f"The same {first_span.tool_name} call, with the same arguments, was made again in turns "
                   f"{', '.join(map(str, turns))} and got the same result as in turn {streak.first_turn + 1}: "
                   "the conversation already had it and nothing had changed.")
    confidence = min(0.9, 0.6 + 0.1 * len(streak.repeats))
    return SessionFinding(mode=MODE, confidence=round(confidence, 2), explanation=explanation, evidence=evidence,
                          turn_trace_id=first_view.trace_id, detector=DETECTOR)


def _recheck_pattern(words: Sequence[str]) -> re.Pattern[str]:
    return _compiled_recheck(tuple(words))


@functools.lru_cache(maxsize=8)
def _compiled_recheck(words: tuple[str, ...]) -> re.Pattern[str]:
    """Compiled once per word list (a session is diagnosed again as each turn arrives)."""
    if not words:
        return re.compile(r"(?!)")  # matches nothing
    return re.compile(r"\b(?:" + "|".join(re.escape(w.casefold()) for w in words) + r")\b")
