"""Every misuse of the ``mast-otel`` command line ends with one line on stderr and exit code 2.

Each case runs the installed console script (not ``main()`` in-process), as a user does: bad
flags, missing or unreadable files, invalid YAML and configuration, ports in use, a real
model without its key. The line must name the problem (``expect``), and there must be no
traceback and nothing else on stderr.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "runs" / "sre_steplist.json"
MAST_OTEL = Path(sys.executable).with_name("mast-otel")


@dataclass
class Misuse:
    name: str
    argv: list[str]
    expect: str  # a fragment the one line must contain
    files: dict[str, str] | None = None  # written into the working folder first
    env: dict[str, str] | None = None


BAD_MODE = "detection:\n  severity_overrides: {FM-9.9: fatal}\n"
CASES = [
    Misuse("no-command", [], "COMMAND"),
    Misuse("unknown-command", ["diagnose"], "invalid choice"),
    Misuse("serve-unknown-flag", ["serve", "--verbose"], "--verbose"),
    Misuse("serve-bad-log-level", ["serve", "--log-level", "LOUD"], "--log-level"),
    Misuse("serve-port-not-a-number", ["serve", "--http-port", "http"], "--http-port"),
    Misuse("serve-port-out-of-range", ["serve", "--http-port", "70000"], "receiver.http_port"),
    Misuse("serve-missing-config", ["serve", "--config", "absent.yaml"], "absent.yaml does not exist"),
    Misuse("serve-config-env-missing", ["serve"], "absent.yaml does not exist", env={"MAST_OTEL_CONFIG": "absent.yaml"}),
    Misuse("serve-yaml-syntax", ["serve", "--config", "c.yaml"], "not valid YAML (line 2", files={"c.yaml": "a: [\n"}),
    Misuse("serve-yaml-not-a-mapping", ["serve", "--config", "c.yaml"], "mapping", files={"c.yaml": "- 1\n"}),
    Misuse("serve-unknown-mode", ["serve", "--config", "c.yaml"], "unknown failure mode 'FM-9.9'", files={"c.yaml": BAD_MODE}),
    Misuse("serve-negative-grace", ["serve", "--config", "c.yaml"], "assembly.grace_seconds",
           files={"c.yaml": "assembly: {grace_seconds: -1}\n"}),
    Misuse("serve-endpoint-not-a-url", ["serve", "--export-endpoint", "tempo:4318"], "http:// or https://"),
    Misuse("serve-unknown-host", ["serve", "--host", "no-such-host.invalid", "--http-port", "0", "--grpc-port", "0",
                                  "--store", "d.sqlite"], "no-such-host.invalid"),
    Misuse("serve-env-missing-delimiter", ["serve", "--http-port", "0", "--grpc-port", "0", "--store", "d.sqlite"],
           "MAST_OTEL_STORE_URL is not a setting: did you mean MAST_OTEL_STORE__URL (store.url)?",
           env={"MAST_OTEL_STORE_URL": "postgresql://mast:secret@127.0.0.1:1/mast"}),
    Misuse("serve-env-misspelled-section", ["serve", "--http-port", "0", "--grpc-port", "0", "--store", "d.sqlite"],
           "MAST_OTEL_STOR__URL is not a setting: did you mean MAST_OTEL_STORE__URL (store.url)?",
           env={"MAST_OTEL_STOR__URL": "postgresql://mast:secret@127.0.0.1:1/mast"}),
    Misuse("config-check-env-misspelled", ["config", "--check", "c.yaml"], "MAST_OTEL_RECEIVER__HTTP_PORTS",
           files={"c.yaml": "{}\n"}, env={"MAST_OTEL_RECEIVER__HTTP_PORTS": "14318"}),
    Misuse("analyze-env-misspelled", ["analyze", str(FIXTURE)], "MAST_OTEL_DETECTON__LIVE",
           env={"MAST_OTEL_DETECTON__LIVE": "false"}),
    Misuse("config-check-missing", ["config", "--check", "absent.yaml"], "absent.yaml does not exist"),
    Misuse("config-check-unknown-mode", ["config", "--check", "c.yaml"], "FM-9.9", files={"c.yaml": BAD_MODE}),
    Misuse("analyze-no-files", ["analyze"], "FILE"),
    Misuse("analyze-missing-file", ["analyze", "absent.json"], "absent.json: cannot read"),
    Misuse("analyze-a-folder", ["analyze", "."], "cannot read"),
    Misuse("analyze-bad-json", ["analyze", "bad.json"], "bad.json:2:1: invalid JSON", files={"bad.json": '{"x": \n'}),
    Misuse("analyze-empty-file", ["analyze", "empty.json"], "no agent run in empty.json (no step-list record and no agent span read)",
           files={"empty.json": ""}),
    Misuse("analyze-no-agent-spans", ["analyze", "web.json"], "no agent run in web.json", files={"web.json": (
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c", '
        '"spanId": "eee19b7ec3c1b174", "name": "GET /healthz", "startTimeUnixNano": "1700000000000000000", '
        '"endTimeUnixNano": "1700000000100000000"}]}]}]}\n')}),
    Misuse("analyze-bad-format", ["analyze", str(FIXTURE), "--format", "pdf"], "--format"),
    Misuse("analyze-output-folder-missing", ["analyze", str(FIXTURE), "--format", "html", "-o", "missing/dir/x.html"],
           "cannot write missing/dir/x.html"),
    Misuse("analyze-bad-config", ["analyze", str(FIXTURE), "--config", "c.yaml"], "FM-9.9", files={"c.yaml": BAD_MODE}),
    Misuse("eval-missing-file", ["eval", "absent.json"], "absent.json: cannot read"),
    Misuse("eval-unlabelled", ["eval", "runs.json"], "no labelled runs",
           files={"runs.json": '{"metadata": {"trace_id": "t1"}, "steps": [{"agent": "a", "kind": "message", "content": "hi"}]}\n'}),
    Misuse("eval-negative-resamples", ["eval", str(FIXTURE), "--resamples", "-1"], "--resamples"),
    Misuse("eval-judge-without-key", ["eval", str(FIXTURE), "--judge", "openai/gpt-4o-mini"], "OPENAI_API_KEY",
           env={"OPENAI_API_KEY": ""}),
    Misuse("serve-store-under-a-file", ["serve", "--store", "c.yaml/d.sqlite", "--http-port", "0", "--grpc-port", "0"],
           "cannot open the store c.yaml/d.sqlite", files={"c.yaml": "{}\n"}),
    Misuse("tools-nothing-named", ["tools"], "--store"),
    Misuse("tools-missing-store", ["tools", "--store", "absent.sqlite"], "absent.sqlite: no such store"),
    Misuse("tools-store-not-sqlite", ["tools", "--store", "d.sqlite"], "d.sqlite: file is not a database",
           files={"d.sqlite": "not a database, just text\n" * 100}),
    Misuse("tools-zero-runs", ["tools", "--store", "absent.sqlite", "--runs", "0"], "--runs"),
    Misuse("demo-zero-runs", ["demo", "--runs", "0"], "--runs"),
    Misuse("demo-port-out-of-range", ["demo", "--http-port", "70000"], "--http-port"),
    Misuse("demo-old-port-flag-out-of-range", ["demo", "--port", "70000"], "--port"),
    Misuse("demo-negative-interval", ["demo", "--interval", "-1"], "--interval"),
    Misuse("demo-once-with-prometheus", ["demo", "--once", "--prometheus"], "--prometheus"),
    Misuse("demo-model-without-key", ["demo", "--model", "openai/gpt-4o-mini"], "OPENAI_API_KEY", env={"OPENAI_API_KEY": ""}),
]


def run_cli(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("MAST_OTEL_CONFIG", "OPENAI_API_KEY")}
    full_env.update({k: v for k, v in (env or {}).items() if v})
    return subprocess.run([str(MAST_OTEL), *argv], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=120)


def assert_one_line(result: subprocess.CompletedProcess, expect: str) -> None:
    lines = result.stderr.splitlines()
    assert result.returncode == 2, f"exit {result.returncode}\nstderr:\n{result.stderr}\nstdout:\n{result.stdout}"
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{result.stderr}"
    assert lines[0].startswith("mast-otel"), lines[0]
    assert expect in lines[0], lines[0]


def test_the_console_script_is_installed():
    assert MAST_OTEL.is_file(), f"{MAST_OTEL} missing: install the package (pip install -e .)"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_misuse_ends_with_one_line_and_exit_2(case: Misuse, tmp_path: Path) -> None:
    for name, text in (case.files or {}).items():
        (tmp_path / name).write_text(text)
    assert_one_line(run_cli(case.argv, tmp_path, case.env), case.expect)


@pytest.fixture
def taken_port():
    """A port some other program listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("flag", ["--http-port", "--grpc-port"])
def test_serve_names_the_port_in_use(flag: str, taken_port: int, tmp_path: Path) -> None:
    ports = {"--http-port": "0", "--grpc-port": "0", flag: str(taken_port)}
    argv = ["serve", "--host", "127.0.0.1", "--store", "data/d.sqlite"] + [x for kv in ports.items() for x in kv]
    assert_one_line(run_cli(argv, tmp_path), f"127.0.0.1:{taken_port}")
    assert not list(tmp_path.iterdir()), "a start that failed left its store or log behind"


def test_variables_the_product_reads_that_are_not_settings_are_accepted(tmp_path: Path) -> None:
    """``MAST_OTEL_CONFIG`` (the file), ``MAST_OTEL_IMAGE`` (compose), a mapping's own keys and the
    deprecated ``detection.thresholds`` are not refused as misspellings."""
    (tmp_path / "c.yaml").write_text("{}\n")
    env = {"MAST_OTEL_CONFIG": "c.yaml", "MAST_OTEL_IMAGE": "mast-otel:dev", "MAST_OTEL_SCREENSHOT_DIR": "img",
           "MAST_OTEL_JUDGE__EXTRA_PARAMS__AWS_REGION_NAME": "eu-west-1",
           "MAST_OTEL_DETECTION__THRESHOLDS": '{"termination.default_max_steps": 7}', "mast_otel_store__path": "x.sqlite"}
    result = run_cli(["config"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert "aws_region_name: eu-west-1" in result.stdout and "default_max_steps: 7" in result.stdout


def test_a_failed_start_keeps_a_store_that_was_there_before(taken_port: int, tmp_path: Path) -> None:
    (tmp_path / "d.sqlite").write_bytes(b"")  # an empty file is a valid new SQLite database
    argv = ["serve", "--store", "d.sqlite", "--http-port", str(taken_port), "--grpc-port", "0"]
    assert_one_line(run_cli(argv, tmp_path), f"127.0.0.1:{taken_port}")
    assert (tmp_path / "d.sqlite").is_file() and not (tmp_path / "d.wal").exists()


def test_two_processors_on_one_log_end_with_one_line(tmp_path: Path) -> None:
    """A second replica pointed at the first one's log (one volume for two containers) stops with
    the reason, not a traceback; the first keeps running."""
    first = subprocess.Popen([str(MAST_OTEL), "serve", "--store", "d.sqlite", "--http-port", "0", "--no-grpc"],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert "ready" in first.stdout.readline()
        second = run_cli(["serve", "--store", "d.sqlite", "--http-port", "0", "--no-grpc"], tmp_path)
        assert_one_line(second, "in use by another process")
        assert "give each processor its own wal.directory" in second.stderr
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
    assert first.returncode == 0


@pytest.mark.parametrize("flag", ["--http-port", "--grpc-port", "--prometheus-port", "--alertmanager-port"])
def test_demo_refuses_a_chosen_port_in_use(flag: str, taken_port: int, tmp_path: Path) -> None:
    argv = ["demo", "--prometheus", "--http-port", "0", "--grpc-port", "0", "--prometheus-port", "0",
            "--alertmanager-port", "0", flag, str(taken_port)]
    assert_one_line(run_cli(argv, tmp_path), f"{flag} {taken_port}")


def test_demo_and_serve_name_the_http_port_alike_and_the_old_demo_flag_still_works(tmp_path: Path) -> None:
    result = run_cli(["demo", "--once", "--runs", "1", "--port", "0", "--grpc-port", "0"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "mast-otel demo: --port is deprecated; use --http-port" in result.stderr
    helps = {command: run_cli([command, "--help"], tmp_path).stdout for command in ("serve", "demo")}
    assert all("--http-port" in text for text in helps.values()) and "--port " not in helps["demo"]


def test_serve_without_grpc_says_so(tmp_path: Path) -> None:
    proc = subprocess.Popen([str(MAST_OTEL), "serve", "--http-port", "0", "--no-grpc", "--store", "d.sqlite"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "OTLP/gRPC off" in line and "None" not in line, line
    assert "None" not in err, err


def test_demo_cleans_up_on_sigterm(tmp_path: Path) -> None:
    """SIGTERM while serving: exit promptly, and the temporary folder is gone."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([str(MAST_OTEL), "demo", "--runs", "1", "--http-port", "0", "--grpc-port", "0"], cwd=tmp_path,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        while not any("Serving" in line for line in seen):
            line = proc.stderr.readline()
            assert line, "".join(seen)
            seen.append(line)
        workdirs = list(tmp_path.glob("mast-otel-demo-*"))
        assert len(workdirs) == 1
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not workdirs[0].exists()


def test_demo_moves_off_a_taken_default_port_and_says_so(tmp_path: Path) -> None:
    """A default port in use (by something listening) moves; a TIME_WAIT leftover would not."""
    try:
        holder = socket.create_server(("127.0.0.1", 4318))
    except OSError:
        holder = None  # already taken by something else: the demo must move all the same
    try:
        result = run_cli(["demo", "--once", "--runs", "1", "--grpc-port", "0"], tmp_path)
    finally:
        if holder is not None:
            holder.close()
    assert result.returncode == 0, result.stderr[-2000:]
    assert "port 4318 (--http-port) is in use; using" in result.stderr


def test_port_probe_ignores_time_wait() -> None:
    """The probe binds as servers do (SO_REUSEADDR): a closed connection's TIME_WAIT leaves the port usable."""
    from mast_otel.demo.ports import is_free

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    conn.close()  # the server side closes first: its end of the connection goes to TIME_WAIT
    time.sleep(0.1)
    client.close()
    server.close()
    assert is_free(port)
    with socket.socket() as plain:  # without SO_REUSEADDR the same bind fails: the case the probe must not trip on
        with pytest.raises(OSError):
            plain.bind(("127.0.0.1", port))



def test_demo_ends_with_one_line_when_the_real_model_is_unreachable(tmp_path: Path) -> None:
    """A key is set but the endpoint does not answer: the run stops with the model's error, no traceback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # nothing listens once the socket closes
    env = {"OPENAI_API_KEY": "sk-test-unreachable", "OPENAI_BASE_URL": closed, "OPENAI_API_BASE": closed}
    result = run_cli(["demo", "--model", "openai/gpt-4o-mini", "--runs", "1", "--once", "--http-port", "0", "--grpc-port", "0"],
                     tmp_path, env)
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "Give Feedback" not in result.stderr + result.stdout
    assert lines[-1].startswith("mast-otel demo: model openai/gpt-4o-mini failed"), lines[-1]
