"""A judge whose provider key is missing says so once at start, instead of failing silently per run."""

from __future__ import annotations

import logging

from mast_otel.processors.config import JudgeConfig
from mast_otel.processors.judge.client import JudgeClient
from mast_otel.processors.judge.service import JudgeService


def test_a_missing_provider_key_is_named(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert JudgeClient(JudgeConfig(model="openai/gpt-4o-mini")).missing_credentials() == ["OPENAI_API_KEY"]


def test_a_key_in_the_environment_or_the_config_satisfies_it(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert JudgeClient(JudgeConfig(model="openai/gpt-4o-mini", api_key="sk-test")).missing_credentials() == []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    assert JudgeClient(JudgeConfig(model="openai/gpt-4o-mini")).missing_credentials() == []


def test_the_service_warns_at_start_without_the_key(monkeypatch, caplog):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    service = JudgeService(JudgeConfig(model="anthropic/claude-3-5-haiku-20241022", max_concurrency=1), runs=None, metrics=None)
    with caplog.at_level(logging.WARNING, logger="mast_otel.processors.judge.service"):
        service.start()
        service.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("ANTHROPIC_API_KEY" in w for w in warnings), warnings
    assert all("sk-" not in w for w in warnings)
