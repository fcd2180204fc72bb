"""What kind of action a tool call is, when the emitter did not say (``mast.tool.kind``).

The detectors need to know which calls change things (``write``), which check them
(``verify``), which ask a person (``clarify``) and which pass the run to another agent
(``handoff``). Tool names say it plainly in most code bases (``restart_deployment``,
``check_health``, ``transfer_to_billing``): the first word of the name that is a known verb
decides; a name without one falls back to the first such word of the tool's description.
"Write" is guessed only from the first word (``restart_deployment``, ``rollback``): a write verb
further in (``visit_page``, ``find_on_page``) is as often a noun, and a read tool taken for a
write makes its run look like one that changed things unchecked. Scrolling (``page_down``,
``scroll_up``) reads.
A check's verdict is read from its result (``{"healthy": false}``, ``status: "failed"``) when
content was captured, and from the call's own failure otherwise. Pure functions.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterable

from mast_otel.processors.frameworks import on_reload, registry
from mast_otel.processors.tools.values import peeled

KINDS = ("read", "write", "verify", "clarify", "handoff", "other")

_HANDOFF = re.compile(r"^(transfer|handoff|hand_off|delegate|route)(_to)?(_|$)|(^|_)handoff(_|$)")
_SCROLL = re.compile(r"^(page|scroll)_(up|down|left|right|top|bottom)(_|$)")
_CLARIFY = re.compile(r"^(ask|clarify|request)_(user|human|clarification|for_clarification)|^(clarify|ask_user|ask_human|human_input|get_human_input|request_user_input)$")
VERBS: dict[str, str] = {
    **dict.fromkeys((
        "get", "list", "describe", "read", "fetch", "search", "query", "show", "find", "lookup", "look", "view",
        "watch", "inspect", "retrieve", "top", "explain", "count", "tail", "grep", "browse", "logs", "summarize",
        "diff", "compare", "analyze", "analyse", "calculate", "compute", "estimate", "trace", "collect", "gather",
        "visit", "scroll", "navigate",
    ), "read"),
    **dict.fromkeys((
        "restart", "delete", "remove", "create", "update", "patch", "apply", "scale", "rollback", "deploy", "set",
        "write", "edit", "modify", "kill", "drain", "cordon", "uncordon", "evict", "install", "upgrade",
        "uninstall", "send", "post", "put", "add", "insert", "move", "rename", "reboot", "stop", "start", "enable",
        "disable", "submit", "commit", "push", "merge", "resize", "cancel", "revert", "approve", "assign",
        "annotate", "label", "taint", "purge", "flush", "reset", "rotate", "change", "fix", "repair", "provision",
        "terminate", "shutdown", "pause", "resume", "suspend", "configure", "replace", "save", "upload", "rollout",
        "restore", "mitigate", "failover", "promote", "demote", "block", "unblock", "allow", "deny", "grant",
        "revoke", "refund", "charge", "book", "order", "email", "notify", "page", "open", "close", "resolve",
    ), "write"),
    **dict.fromkeys((
        "check", "verify", "validate", "test", "probe", "assert", "confirm", "ensure", "healthcheck", "health",
        "smoke", "lint",
    ), "verify"),
    **dict.fromkeys(("ask", "clarify"), "clarify"),
}
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

PASS_WORDS = frozenset({"pass", "passed", "ok", "healthy", "success", "succeeded", "ready", "green", "valid", "true"})
FAIL_WORDS = frozenset({"fail", "failed", "failure", "unhealthy", "error", "degraded", "red", "invalid", "false",
                        "notready", "not_ready", "down", "crashloopbackoff"})
VERDICT_FIELDS = ("healthy", "passed", "pass", "ok", "success", "succeeded", "valid", "ready", "is_healthy",
                  "all_passed", "result", "status", "state", "health")


# A tool that moves a viewer over a page: scrolls it, finds text on it, or opens it at an address.
_VIEWER = re.compile(r"^(page|scroll)_(up|down|left|right|top|bottom)(_|$)|^find_(next|previous|on_page)(_|$)|"
                     r"^(visit|open|goto|go_to|navigate(_to)?|browse)_(page|url|web_?page|link)(_|$)")


@lru_cache(maxsize=1024)
def moves_viewer(name: str | None) -> bool:
    """Whether a tool shows a view of a page (``visit_page``, ``page_down``, ``find_on_page_ctrl_f``,
    ``find_next``): calls that show views already shown go round in circles."""
    return bool(name) and bool(_VIEWER.search("_".join(words(name or ""))))


def words(name: str) -> list[str]:
    return [w.lower() for w in _SPLIT.split(name) if w]


@lru_cache(maxsize=4096)  # tools repeat across calls and runs
def infer(name: str | None, description: str | None = None) -> tuple[str, str] | None:
    """(kind, why) for a tool, or ``None`` when neither name nor description says."""
    if not name:
        return None
    snake = "_".join(words(name))
    if _HANDOFF.search(snake) or snake in registry().handoff_tools:
        return "handoff", f"its name {name!r} hands the run to another agent"
    if _CLARIFY.search(snake):
        return "clarify", f"its name {name!r} asks a person"
    if _SCROLL.search(snake):
        return "read", f"its name {name!r} scrolls"
    for i, word in enumerate(words(name)):
        kind = VERBS.get(word)
        if kind is not None and (i == 0 or kind != "write"):
            return kind, f"its name {name!r} starts its action with {word!r}"
    for i, word in enumerate(words(description or "")[:12]):
        kind = VERBS.get(word)
        if kind is not None and (i == 0 or kind != "write"):
            return kind, f"its description starts its action with {word!r}"
    return None


on_reload(infer.cache_clear)


def matches(pattern: str, name: str) -> bool:
    """A catalog name: exact, or a shell-style pattern (``restart_*``, ``kubectl_*``)."""
    if any(c in pattern for c in "*?["):
        from fnmatch import fnmatchcase

        return fnmatchcase(name, pattern)
    return pattern == name


def verdict(result: Any) -> bool | None:
    """A check's outcome read from its result: ``True`` passed, ``False`` failed, ``None`` unknown."""
    value = peeled(result)
    if isinstance(value, bool):
        return value
    if isinstance(value, dict):
        for key in VERDICT_FIELDS:
            if key in value:
                found = _word_verdict(value[key])
                if found is not None:
                    return found
        return None
    if isinstance(value, str):
        return _text_verdict(value)
    return None


def _text_verdict(text: str) -> bool | None:
    """A report's verdict: any failure word fails it, else a pass word passes it."""
    found = words(text)[:40]
    if any(w in FAIL_WORDS for w in found) or "not healthy" in text.lower():
        return False
    if any(w in PASS_WORDS for w in found):
        return True
    return None


def _word_verdict(value: Any) -> bool | None:
    """A verdict field's value: a status word, else a sentence read as a report."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower().replace(" ", "_")
        if word in FAIL_WORDS:
            return False
        if word in PASS_WORDS:
            return True
        if len(words(value)) > 1:
            return _text_verdict(value)
    return None


def first_match(rules: Iterable[Any], name: str, service: str | None, agent: str | None) -> Any:
    """The first catalog rule for ``name`` whose scope (service, agent) fits, or ``None``."""
    for rule in rules:
        if rule.service is not None and rule.service != service:
            continue
        if rule.agent is not None and rule.agent != agent:
            continue
        if matches(rule.name, name):
            return rule
    return None
