"""Secret and personal-data redaction applied to everything the judge sends out.

Nothing captured from a run reaches an external model unredacted: common credential
formats, bearer tokens, JWTs, private key blocks, passwords in URLs and connection
strings, and email addresses become ``[REDACTED:<kind>]`` placeholders. Users add their own
patterns (``judge.redaction_patterns``). Redaction runs before truncation, so a cut can never
leave a fragment of a secret that the patterns would no longer recognise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Pattern, Union

Replacement = Union[str, Callable[["re.Match[str]"], str]]


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _keep_prefix(kind: str) -> Callable[["re.Match[str]"], str]:
    """Keep group 1 (a key name, a scheme and user) and replace the secret after it."""
    return lambda m: m.group(1) + placeholder(kind) + (m.group(3) if m.lastindex and m.lastindex >= 3 else "")


# Order matters: whole structures (key blocks, URLs, JWTs) before the token shapes they contain.
BUILTIN_RULES: tuple[tuple[str, str, Replacement], ...] = (
    (
        "private_key",
        # An unterminated block (cut by an emitter's size cap) is redacted to the end.
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
        placeholder("private_key"),
    ),
    (
        "url_password",
        r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(@)",
        _keep_prefix("password"),
    ),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}", placeholder("jwt")),
    ("bearer_token", r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})", _keep_prefix("bearer_token")),
    ("openai_key", r"\bsk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_-]{16,}", placeholder("api_key")),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", placeholder("aws_access_key")),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b", placeholder("github_token")),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", placeholder("slack_token")),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{30,}", placeholder("google_api_key")),
    (
        # password=..., "pwd": "...", Password=...; in connection strings, env dumps, JSON
        "password",
        r"""(?i)(\b(?:password|passwd|pwd)["']?\s*[:=]\s*["']?)([^\s"',;&}]+)""",
        _keep_prefix("password"),
    ),
    (
        # api_key=..., "access_token": "...", SECRET_KEY: ... with a long token-like value
        "secret_assignment",
        r"""(?i)(\b[\w.-]*(?:api[_-]?key|token|secret|access[_-]?key|client[_-]?secret)["']?\s*[:=]\s*["']?)"""
        r"""([A-Za-z0-9_\-./+=]{16,})""",
        _keep_prefix("secret"),
    ),
    ("email", r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b", placeholder("email")),
)


@dataclass
class Redactor:
    """Applies the built-in rules, then the user's patterns, to text bound for the judge."""

    extra_patterns: Iterable[str] = ()
    _rules: list[tuple[str, Pattern[str], Replacement]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rules = [(kind, re.compile(rx, re.DOTALL), repl) for kind, rx, repl in BUILTIN_RULES]
        for pattern in self.extra_patterns:
            try:
                self._rules.append(("custom", re.compile(pattern), placeholder("custom")))
            except re.error as exc:
                raise ValueError(f"redaction pattern {pattern!r} is not a valid regular expression: {exc}") from None

    def redact(self, text: str) -> str:
        for _kind, rx, repl in self._rules:
            text = rx.sub(repl, text)
        return text

    def findings(self, text: str) -> dict[str, int]:
        """How many secrets of each kind ``redact`` replaces in ``text`` (tests, diagnostics)."""
        counts: dict[str, int] = {}
        for kind, rx, repl in self._rules:
            text, n = rx.subn(repl, text)
            if n:
                counts[kind] = counts.get(kind, 0) + n
        return counts
