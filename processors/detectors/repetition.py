"""FM-1.3 step repetition: the run repeats an action (or an output) and learns nothing new.

A tool call repeats when the same tool is called with the same arguments hash and returns
the same result hash (or fails the same way) as the previous such call. A different result
resets the streak, so polling that watches something change is never flagged. Repeated
identical model outputs count too, when content was captured, but only while nothing new
enters the run between them (no output or tool result not seen before): a canned reply
that alternates with fresh work is protocol, an exchange that keeps coming back unchanged
is a loop.

A handoff (``transfer_to_operator``, a delegation to the same worker) is an edge between agents:
the same handoff again is a repetition only when no work tool returned anything new since the
last one, so agents passing a task back and forth while it progresses are never flagged, and
two agents each handing back to the same coordinator are not one streak.

Near-identical calls repeat too (see ``near_repeats``): the same tool asked again for what its
last call asked, in other words (case, punctuation, word order, an empty value written another
way, arguments that are all empty however the fields are called) or reworded (most words shared),
returning the same result, with no call of any tool returning anything new in between. A search
whose results list the same web addresses as the last one's (whatever header echoes the query)
brought nothing new however it was worded. Only read when the arguments' content was captured; the
finding says what was taken as the same. A write, or any other result not seen before, in
between starts over, and so does a different result (a refined query that finds something).

A call the tool refused for its arguments (an unexpected keyword, a schema error: see
``tools.failures``) resent with the same arguments is refused again: once resent is a repeat.

Page viewers (visit a page, scroll it, find on it: ``tools.kinds.moves_viewer``) going round:
calls in a row, through more than one call, each showing a view (result hash) already shown.
Pagination that reaches a view not seen before starts over. Reads hashes only, so content off too.

A code agent's action is the code its model writes (see ``code_actions``): the same code in
consecutive model outputs (comments and layout aside) recomputes what it computed, and code the
interpreter refuses before running it the same way is refused again, so twice is a repeat; the same
code with only the wording of its texts changed is one from the threshold on. No tool call returning
anything new in between, in each case; different code in between starts over.

A finding reports the whole repeated run: it is raised when the run reaches the threshold and
raised again, with the count and evidence grown, for every further repeat of that same run, so
six identical calls read "called 6 times" with all six as evidence. Its anchor stays on the
call that made the run a loop (where it was first raised, live or not).

Incremental: the same tracker serves the whole-run diagnosis and live detection (both keep a
re-raised finding's last version, see ``context.latest``).
"""

from __future__ import annotations

from mast_otel.processors.detectors.settings import DetectionConfig, RepetitionConfig
from mast_otel.processors.detectors.context import RunContext, finding
from mast_otel.processors.detectors.code_actions import CodeShape, code_action, parse_failure, shape_of
from mast_otel.processors.detectors.near_repeats import (
    Request, addresses_in, request_of, request_of_texts, same_fields, sameness,
)
from mast_otel.processors.tools.failures import refused_arguments
from mast_otel.processors.tools.kinds import moves_viewer
from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.model import LLM, TOOL, Finding, Span
from mast_otel.processors.team import decision_of, is_handoff

DETECTOR = "repetition"
MODE = "FM-1.3"


def _outcome(span: Span) -> str | None:
    """What a tool call returned, as a comparable token; ``None`` when unknown."""
    if span.result_hash:
        return span.result_hash
    if span.error:
        return f"error:{span.error_type or ''}"
    return None




MIN_ADDRESSES = 2  # a result listing fewer addresses is compared whole
MAX_VIEWS = 4096  # page views remembered per run


def _came_back(span: Span) -> str | None:
    """What a call brought back, for telling whether a rewording learned anything: the addresses a
    result lists (a search's hits, whatever header echoes the query) when content shows two or
    more, else its outcome (result hash, or how it failed)."""
    found = addresses_in(span.tool_result) if span.tool_result and not span.error else frozenset()
    if len(found) >= MIN_ADDRESSES:
        return f"links:{len(found)}:{stable_hash(sorted(found))}"
    return _outcome(span)


def _normalized(text: str) -> str:
    return " ".join(text.lower().split())


class RepetitionTracker:
    """Feeds on steps in order; returns a finding the moment a streak reaches its threshold, and
    an updated one for each further repeat of that streak (live detection raises the mode once).

    Live, one is made for every trace and fed every step, so a streak is one list (the outcome,
    then the calls) that grows in place rather than a new one per call.
    """

    def __init__(self, config: RepetitionConfig, *, live: bool = False) -> None:
        self.min_tool_repeats = max(2, config.min_tool_repeats)
        self.min_output_repeats = max(2, config.min_output_repeats)
        self.min_output_chars = config.min_output_chars
        self.live = live
        self._streaks: dict[tuple[str, str], list[str]] = {}  # (tool, args hash) -> [outcome, span ids...]
        self._outputs: dict[str, tuple[int, list[str]]] = {}  # text -> (novelty mark at last sight, spans)
        self._seen: set[object] = set()
        self._novelty = 0  # bumped whenever a step brings something the run has not seen before
        self._work = 0  # bumped whenever a tool call other than a handoff returns something new
        self._handoff_marks: dict[tuple[str, str], int] = {}  # handoff streak -> ``_work`` at its last call
        # what a finding was raised for -> (first span of the run it reported, the span it went on)
        self._flagged: dict[object, tuple[str, str]] = {}
        self._near: dict[str, _NearStreak] = {}  # tool -> its latest run of calls asking the same thing
        self._exact_ids: set[str] = set()  # calls an exact repeat finding already reports
        self._code: _CodeStreak | None = None  # the latest run of code actions doing the same thing
        self._views: set[str] = set()  # results of page viewers seen so far
        self._circling: list[str] = []  # viewer calls in a row that showed only views already seen
        self._circling_calls: set[tuple[str, str | None]] = set()  # their distinct (tool, arguments)

    def observe(self, span: Span, key: str | None = None) -> Finding | None:
        """``key`` is ignored: a loop is a loop whichever agent of the run runs it."""
        role = span.role
        if role is TOOL:
            return self._tool(span)
        if role is LLM and span.output_text:
            found = self._output(span)
            code = code_action(span.output_text) if not span.requested_tools else None
            if code is not None:
                found = self._code_action(span, code) or found
            return found
        return None

    def _note(self, token: object) -> None:
        if token not in self._seen:
            self._seen.add(token)
            self._novelty += 1

    def _reported(self, key: object, ids: list[str]) -> str | None:
        """The anchor of the finding for the run ``ids`` of ``key`` (flagging it now if it is the
        first), or ``None`` when ``key`` was flagged for an earlier run: reported once, as before."""
        flagged = self._flagged.get(key)
        if flagged is None:
            self._flagged[key] = (ids[0], ids[-1])
            return ids[-1]
        return flagged[1] if flagged[0] == ids[0] else None

    def _tool(self, span: Span) -> Finding | None:
        work_before = self._work
        exact = self._exact(span)
        if span.tool_args is None or span.tool_kind == "handoff" or (span.tool_kind is None and is_handoff(span)):
            return exact
        near = self._near_repeat(span, work_before)
        cycle = self._viewer_cycle(span)
        return exact if exact is not None else near if near is not None else cycle

    def _exact(self, span: Span) -> Finding | None:
        outcome = span.result_hash or (_outcome(span) if span.error else None)
        args_hash = span.args_hash
        token = (span.tool_name, args_hash, outcome or span.span_id)
        kind = span.tool_kind  # a handoff's kind, or before kinds are derived (live) its name, says so
        handoff = kind == "handoff" if kind is not None else is_handoff(span)
        if token not in self._seen:  # _note, inline: this runs for every tool call
            self._seen.add(token)
            self._novelty += 1
            if not handoff:
                self._work += 1
        if not args_hash or outcome is None:
            return None
        key = (span.tool_name or span.name, args_hash)
        streak = self._streaks.get(key)
        if streak is not None and streak[0] == outcome and (not handoff or self._handoff_marks.get(key) == self._work):
            streak.append(span.span_id)
        else:
            streak = self._streaks[key] = [outcome, span.span_id]
        if handoff:
            self._handoff_marks[key] = self._work
        refused = outcome.startswith("error:") and refused_arguments(span.error_type, span.status_message)
        if len(streak) <= (2 if refused else self.min_tool_repeats):
            return None  # arguments the tool refused are refused again: once resent is already a repeat
        ids = streak[1:]
        anchor = self._reported(key, ids)
        if anchor is None:
            return None
        what = "failed the same way" if outcome.startswith("error:") else "returned the same result"
        if refused:
            what += " (the tool refused these arguments, so sending them again could not succeed)"
        if handoff:
            what += ", with nothing new learned in between"
        self._exact_ids.update(ids)
        return finding(
            MODE, min(0.95, 0.7 + 0.05 * len(ids)),
            f"{'handoff' if handoff else 'tool'} {key[0]!r} was called {len(ids)} times with the same arguments and {what} each time",
            ids, DETECTOR, anchor=anchor, live=self.live,
        )

    def _near_repeat(self, span: Span, work_before: int) -> Finding | None:
        """A call that asks again what the same tool's last call asked, in other words, and learns nothing new."""
        name = span.tool_name or span.name
        args = span.tool_args or ""
        outcome = _came_back(span) or "nothing"  # arguments captured, no result: it returned nothing
        streak = self._near.get(name)
        same, request = None, None
        if streak is not None and streak.outcome == outcome and streak.mark == work_before:
            # the arguments are read (parsed, their words split) only when there is a request to compare with
            request = request_of(args)
            same = sameness(streak.request(), request)
            if same is None and outcome.startswith("links:") and same_fields(streak.request(), request):
                same = "reworded"  # other words, the very same addresses back: the rewording found nothing new
        if streak is None or same is None:
            streak = self._near[name] = _NearStreak(outcome, args, request)
        else:
            streak.args, streak.read = args, request  # the streak's latest call: this one, read
            if same == "reworded":
                streak.reworded = True
        streak.mark = self._work
        streak.ids.append(span.span_id)
        streak.arguments.add(span.args_hash)
        ids = streak.ids
        if len(ids) < self.min_tool_repeats or len(streak.arguments) < 2 or not self._exact_ids.isdisjoint(ids):
            return None  # identical arguments throughout are the exact rule's to report
        anchor = self._reported(("near", name), ids)
        if anchor is None:
            return None
        taken = ("reworded arguments (the same fields in other words, bringing back the same addresses)"
                 if streak.reworded and outcome.startswith("links:") else
                 "reworded arguments (the same fields, texts sharing most of their words)" if streak.reworded else
                 "arguments that differ only in case, whitespace, punctuation, word order, little words (\"the\", \"of\") "
                 "or how an empty value is written")
        what = "failed the same way" if outcome.startswith("error:") else (
            "returned nothing" if outcome == "nothing" else
            f"returned the same {outcome.split(':')[1]} addresses" if outcome.startswith("links:") else
            "returned the same result")
        return finding(
            MODE, min(0.9, 0.6 + 0.05 * len(ids)),
            f"tool {name!r} was called {len(ids)} times asking the same thing, taken as the same request from {taken}, "
            f"and {what} each time, with nothing new learned in between",
            list(ids), DETECTOR, anchor=anchor, live=self.live,
        )

    def _code_action(self, span: Span, code: str) -> Finding | None:
        """The same code action again, nothing new learned since the last: the same code, the same code with
        its comments or the wording of its texts changed, or code refused before running the same way.
        The code is read (tokenized, parsed) only when it is not the previous action's verbatim."""
        last = self._code
        same: str | None = None
        shape: CodeShape | None = None
        refused: str | None = _UNREAD
        if last is not None and last.mark == self._work:
            if last.code == code:
                same = "same"
            else:
                shape = shape_of(code)
                if last.shape() == shape:  # only comments or layout differ: what runs is the same
                    same = "same"
                elif last.shape().skeleton == shape.skeleton:
                    texts = request_of_texts(list(shape.texts))
                    # asked as the previous action asked, or as the first of the streak did (a rewording drifts)
                    if sameness(last.texts(), texts) or sameness(last.first_texts(), texts):
                        same = "reworded"
                if same != "same":  # refused alike says more than reworded: nothing ran at all
                    refused = parse_failure(code)
                    if refused is not None and refused == last.refusal():
                        same = "refused"
        if last is None or same is None:
            last = self._code = _CodeStreak(code, len(self._exact_ids), shape)
        else:
            last.follow(code, shape, same)
        if refused != _UNREAD:
            last.known_refusal = refused
        last.ids.append(span.span_id)
        last.mark = self._work
        ids = last.ids
        # Code run again verbatim recomputes what it computed, and code refused before running is refused
        # again: once more is already a repeat. A rewording is one only from the threshold on.
        needed = self.min_tool_repeats if last.reworded else 2
        if len(ids) < needed or len(self._exact_ids) > last.exact_before:
            return None  # the tool calls the code made were already reported as the loop
        anchor = self._reported(("code", ids[0]), ids)
        if anchor is None:
            return None
        if last.refused is not None:
            how = f"code the interpreter refused before running it, the same way each time ({last.refused})"
        elif last.reworded:
            how = ("the same code each time, only its comments or the wording of its texts changed (texts sharing "
                   "most of their words)")
        else:
            how = "the same code each time, whatever it said around it"
        return finding(
            MODE, min(0.9, 0.6 + 0.05 * len(ids)),
            f"the agent ran the same code action {len(ids)} times in a row (its model wrote {how}), "
            "with no tool returning anything new in between",
            ids, DETECTOR, anchor=anchor, live=self.live,
        )

    def _viewer_cycle(self, span: Span) -> Finding | None:
        """Page viewer calls (visit, scroll, find on page) in a row that only showed views already shown:
        going round a page without reaching anything new. A view not seen before starts over."""
        name = span.tool_name or span.name
        if not moves_viewer(name):
            return None
        view = span.result_hash
        if view is None or span.error:  # nothing shown (a failure is the other rules' to read)
            self._circling, self._circling_calls = [], set()
            return None
        if view not in self._views:
            if len(self._views) < MAX_VIEWS:  # past the cap every view reads as new: quiet, never wrong
                self._views.add(view)
            self._circling, self._circling_calls = [], set()
            return None
        self._circling.append(span.span_id)
        self._circling_calls.add((name, span.args_hash))
        ids = self._circling
        # one call again and again is the exact rule's; a cycle goes through several
        if len(ids) < self.min_tool_repeats or len(self._circling_calls) < 2 or not self._exact_ids.isdisjoint(ids):
            return None
        anchor = self._reported(("views", ids[0]), ids)
        if anchor is None:
            return None
        tools = sorted({n for n, _ in self._circling_calls})
        return finding(
            MODE, min(0.9, 0.6 + 0.05 * len(ids)),
            f"the agent moved around pages {len(ids)} times in a row ({', '.join(map(repr, tools))}) and each call "
            "showed a view it had already seen: nothing new came back",
            list(ids), DETECTOR, anchor=anchor, live=self.live,
        )

    def looping(self, tool: str, args_hash: str | None) -> tuple[str, ...]:
        """The calls of a streak that has reached the threshold for ``tool`` with these arguments, else ``()``.

        A loop guard asks this before letting the same call run again.
        """
        streak = self._streaks.get((tool, args_hash or ""))
        if streak is None or len(streak) <= self.min_tool_repeats:
            return ()
        return tuple(streak[1:])

    def _output(self, span: Span) -> Finding | None:
        text = _normalized(span.output_text or "")
        previous = self._outputs.get(text)
        self._note(text)
        if len(text) < self.min_output_chars:
            return None
        ids = previous[1] + [span.span_id] if previous and previous[0] == self._novelty else [span.span_id]
        self._outputs[text] = (self._novelty, ids)
        if len(ids) < self.min_output_repeats:
            return None
        anchor = self._reported(text, ids)
        if anchor is None:
            return None
        return finding(
            MODE, min(0.9, 0.6 + 0.05 * len(ids)),
            f"the model produced the same output {len(ids)} times",
            ids, DETECTOR, anchor=anchor, live=self.live,
        )


class _NearStreak:
    """Calls of one tool in a row that ask the same thing and get the same outcome. The latest call's
    request is read from its arguments when the next call has one to compare with: most calls are
    followed by none (a different outcome, or new results in between), so most are never read."""

    __slots__ = ("outcome", "args", "read", "mark", "ids", "arguments", "reworded")

    def __init__(self, outcome: str, args: str, read: Request | None = None) -> None:
        self.outcome = outcome
        self.args = args  # the latest call's arguments
        self.read = read  # what they ask (``request_of``), once read
        self.mark = 0  # the tracker's count of new results after the streak's last call
        self.ids: list[str] = []
        self.arguments: set[str | None] = set()  # distinct argument hashes seen
        self.reworded = False

    def request(self) -> Request:
        """What the latest call asks, read on first ask."""
        if self.read is None:
            self.read = request_of(self.args)
        return self.read


_UNREAD = "\0unread"  # a refusal not read yet


class _CodeStreak:
    """Code actions in a row that do the same thing, with nothing new learned in between. What the latest
    action's code reads as (its shape, texts, refusal) is worked out only when a comparison needs it."""

    __slots__ = ("code", "_shape", "_texts", "_first_texts", "known_refusal", "refused", "mark", "ids",
                 "exact_before", "reworded")

    def __init__(self, code: str, exact_before: int, shape: CodeShape | None = None) -> None:
        self.code, self._shape = code, shape
        self._texts: Request | None = None
        self._first_texts: Request | None = None
        self.known_refusal: str | None = _UNREAD  # how the interpreter refuses the latest code (None: it parses)
        self.refused: str | None = None  # the refusal every action of the streak shares, when each was refused
        self.mark = 0  # the tracker's count of new results after the streak's last action
        self.ids: list[str] = []
        self.exact_before = exact_before  # exact repeats already reported when the streak began
        self.reworded = False  # an action of the streak rewords another (not verbatim, not refused alike)

    def shape(self) -> CodeShape:
        if self._shape is None:
            self._shape = shape_of(self.code)
        return self._shape

    def texts(self) -> Request:
        if self._texts is None:
            self._texts = request_of_texts(list(self.shape().texts))
        return self._texts

    def first_texts(self) -> Request:
        if self._first_texts is None:
            self._first_texts = self.texts()
        return self._first_texts

    def refusal(self) -> str | None:
        if self.known_refusal == _UNREAD:
            self.known_refusal = parse_failure(self.code)
        return self.known_refusal

    def follow(self, code: str, shape: CodeShape | None, same: str) -> None:
        """The next action, found to do what the streak does (``same``: how)."""
        if same == "reworded":
            self.reworded = True
        if same == "refused":
            self.refused = self.refusal() if len(self.ids) == 1 or self.refused is not None else None
        elif same != "same":
            self.refused = None
        self.first_texts()  # kept before the latest code changes
        if code != self.code:
            self.code, self._shape, self._texts, self.known_refusal = code, shape, None, _UNREAD


def detect(ctx: RunContext) -> list[Finding]:
    found = ctx.replay(DETECTOR, lambda: RepetitionTracker(ctx.config.repetition).observe, keyed=False)  # reads no key
    if not found and len(ctx.run.agent_spans) > 1:
        found = _handoff_loop(ctx)
    return found


def _handoff_loop(ctx: RunContext) -> list[Finding]:
    """A team passing the same task back and forth: the same handoff (same agents, same arguments)
    several times in a row with no work in between whose result was new. A handoff's own result
    (a graph's command, a transfer's echo) carries ids that differ each time, so this reads
    the work between handoffs, not the handoffs' results. Work whose result is unknown (content off)
    counts as progress: silence is never read as a loop."""
    team = ctx.team
    if len(team.handoffs) < ctx.config.repetition.min_tool_repeats:
        return []
    handoff_ids = team.handoff_span_ids()
    by_id = ctx.run.spans_by_id
    # A sub-agent's span with no call carrying it says neither what it was asked nor, when its tools
    # are not recorded, what it did: its model calls' answers are its work then.
    spans_only = any((c := by_id.get(h.span_id)) is not None and c.role is not TOOL for h in team.handoffs)
    work = sorted([s for s in ctx.run.tool_calls if s.tool_kind != "handoff" and s.span_id not in handoff_ids]
                  + ([c for c in ctx.run.llm_calls if not c.requested_tools] if spans_only else []),
                  key=lambda s: s.start_ns)
    seen: set[tuple[str | None, str | None, str | None]] = set()
    streaks: dict[tuple[str | None, str | None, str | None], list] = {}
    done = 0  # work calls already read
    for handoff in team.handoffs:
        progress = False  # since the previous handoff: new results make every streak start over
        while done < len(work) and work[done].start_ns < handoff.start_ns:
            s = work[done]
            token = (s.tool_name, s.args_hash, s.result_hash) if s.role is TOOL else (None, None, s.output_text)
            progress = progress or token[2] is None or token not in seen
            seen.add(token)
            done += 1
        if progress:
            streaks.clear()
        carrier = by_id.get(handoff.span_id)
        edge = (handoff.source, handoff.target, carrier.args_hash if carrier is not None and carrier.role is TOOL else None)
        streak = streaks.setdefault(edge, [])
        streak.append(handoff)
        if len(streak) >= ctx.config.repetition.min_tool_repeats and handoff.source != handoff.target:
            decisions = [decision_of(ctx.run, h) for h in streak]
            ids = [d.span_id if d is not None else h.span_id for d, h in zip(decisions, streak)]
            return [finding(MODE, min(0.9, 0.6 + 0.05 * len(ids)),
                            f"agent {edge[0]!r} handed the same task to {edge[1]!r} {len(ids)} times, and no work "
                            "in between returned anything new", ids, DETECTOR, anchor=ids[-1])]
    return []


def live_tracker(config: DetectionConfig) -> RepetitionTracker:
    return RepetitionTracker(config.repetition, live=True)
