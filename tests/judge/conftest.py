"""Fixtures for the judge tests (helpers live in ``judge_support``, a name no other test folder uses)."""

from __future__ import annotations

import pytest
from judge_support import JudgeServer

from mast_otel.processors.config import JudgeConfig


@pytest.fixture
def judge_server():
    server = JudgeServer()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.fixture
def server_config(judge_server: JudgeServer):
    """A judge configuration pointing at the local server; tests override fields with ``model_copy``."""
    return JudgeConfig(
        model="openai/local-judge",
        api_base=judge_server.api_base,
        api_key="test-key-not-a-secret",
        retry_backoff_seconds=0.01,
        timeout_seconds=5,
        redaction_patterns=[r"CUST-\d{6}"],
    )
