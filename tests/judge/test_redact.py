"""Redaction: every built-in secret shape and user patterns become placeholders."""

from __future__ import annotations

import pytest
from judge_support import SECRET_TEXT, SECRETS
from pydantic import ValidationError

from mast_otel.processors.config import JudgeConfig
from mast_otel.processors.judge.redact import Redactor


@pytest.fixture
def redactor() -> Redactor:
    return Redactor([r"CUST-\d{6}"])


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_kind_is_removed(redactor: Redactor, kind: str) -> None:
    assert SECRETS[kind] in SECRET_TEXT
    assert SECRETS[kind] not in redactor.redact(SECRET_TEXT)


def test_placeholders_name_the_kind_and_keep_the_surrounding_text(redactor: Redactor) -> None:
    out = redactor.redact("db at postgres://admin:pw12345@db:5432/x, mail ops@example.org, Bearer abcdefgh12345678")
    assert "postgres://admin:[REDACTED:password]@db:5432/x" in out
    assert "mail [REDACTED:email]" in out
    assert "Bearer [REDACTED:bearer_token]" in out


def test_an_unterminated_private_key_block_is_redacted_to_the_end(redactor: Redactor) -> None:
    out = redactor.redact("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA")
    assert out == "key:\n[REDACTED:private_key]"


@pytest.mark.parametrize(
    "text",
    [
        "kubectl get pods -n payments --since=10m",
        "max_tokens=2048 temperature=0.2",
        "error: connection refused to 10.0.0.12:5432",
        "the token budget is 12000",
    ],
)
def test_ordinary_operational_text_is_left_alone(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text) == text


def test_user_patterns_come_from_configuration_and_bad_ones_are_rejected() -> None:
    config = JudgeConfig(redaction_patterns=[r"TICKET-\d+"])
    assert Redactor(config.redaction_patterns).redact("see TICKET-4411") == "see [REDACTED:custom]"
    with pytest.raises(ValidationError, match="not a valid regular expression"):
        JudgeConfig(redaction_patterns=["(unclosed"])


def test_findings_counts_matches_by_kind(redactor: Redactor) -> None:
    counts = redactor.findings(SECRET_TEXT)
    assert counts["email"] == 1 and counts["custom"] == 1 and counts["private_key"] == 1
