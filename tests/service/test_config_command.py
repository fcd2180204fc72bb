"""``mast-otel config``: the effective configuration with secrets masked, and ``--check``."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml


def _config(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mast_otel.processors.cli", "config", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=60)


def test_check_names_the_bad_field_and_exits_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("receiver:\n  http_port: 70000\nexporters:\n  otlp:\n    - endpoint: http://a/v1/traces\n      protocol: carrier-pigeon\n")
    result = _config("--check", str(bad))
    assert result.returncode == 2
    assert "receiver.http_port" in result.stderr and "exporters.otlp.0.protocol" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_check_accepts_a_good_file_and_notes_deprecations(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("exporter: {endpoint: http://a/v1/traces}\nstore: {enabled: false}\n")
    result = _config("--check", str(good))
    assert result.returncode == 0, result.stderr
    assert "deprecated" in result.stderr


def test_prints_the_effective_configuration_with_secrets_masked(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("exporters:\n  otlp:\n    - endpoint: http://a/v1/traces\n    - endpoint: http://b/v1/traces\n")
    result = _config("--config", str(path), env={"MAST_OTEL_JUDGE__API_KEY": "sk-live-do-not-print",
                                                 "MAST_OTEL_RECEIVER__HTTP_PORT": "14318"})
    assert result.returncode == 0, result.stderr
    assert "sk-live-do-not-print" not in result.stdout
    data = yaml.safe_load(result.stdout)
    assert data["judge"]["api_key"] == "********"
    assert data["receiver"]["http_port"] == 14318  # the environment applies on top of the file
    assert [e["endpoint"] for e in data["exporters"]["otlp"]] == ["http://a/v1/traces", "http://b/v1/traces"]
