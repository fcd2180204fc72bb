"""Process-level guarantees: a light import, and content hashes equal across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from mast_otel.wire.hashing import stable_hash

SAMPLES = [
    {"namespace": "prod", "resource": "pods", "labels": {"b": 2, "a": 1}},
    {"resource": "pods", "labels": {"a": 1, "b": 2}, "namespace": "prod"},
    '{"resource": "pods"}',
    ["kubectl", "get", "pods", 3, 2.5, None, True],
    "plain text with ünïcödé",
]


def _run(code: str, **env: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **env))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_loads_neither_fastapi_nor_litellm():
    out = _run(
        "import sys, json, mast_otel.instrumentation as m\n"
        "m.agent_run; m.tool; m.setup_tracing\n"
        "heavy = ('fastapi', 'litellm', 'starlette', 'grpc', 'requests', 'openai')\n"
        "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules} & set(heavy))))"
    )
    assert json.loads(out) == []


def test_guards_load_the_shared_trackers_without_the_processor_stack():
    out = _run(
        "import sys, json, mast_otel.instrumentation as m\n"
        "before = 'pydantic' in sys.modules\n"
        "from mast_otel.instrumentation.guards import GuardConfig, RunGuard\n"
        "from mast_otel.processors.detectors.repetition import RepetitionTracker\n"
        "RunGuard(GuardConfig.all('enforce'))\n"
        "heavy = ('fastapi', 'litellm', 'starlette', 'grpc', 'requests', 'openai', 'pydantic_settings', 'yaml',\n"
        "         'prometheus_client', 'jinja2', 'httpx', 'uvicorn')\n"
        "print(json.dumps([before, sorted({n.split('.')[0] for n in sys.modules} & set(heavy))]))"
    )
    assert json.loads(out) == [False, []]  # pydantic only once guards are imported; nothing of the processor's


def test_guards_run_where_the_agent_side_install_has_no_orjson():
    """orjson comes with the processor's install only: the guards' shared trackers read tool
    content with the standard ``json`` where it is missing."""
    out = _run(
        "import sys, json\n"
        "sys.modules['orjson'] = None  # as if not installed\n"
        "from mast_otel.instrumentation.guards import GuardConfig, RunGuard\n"
        "from mast_otel.processors.tools.json_text import loads\n"
        "RunGuard(GuardConfig.all('enforce'))\n"
        "print(json.dumps(loads('{\"a\": [1, 2.5, null], \"b\": 123456789012345678901234567890}')))"
    )
    assert json.loads(out) == {"a": [1, 2.5, None], "b": 123456789012345678901234567890}


def test_hashes_are_stable_across_processes_and_hash_seeds():
    payload = json.dumps(SAMPLES)
    here = [stable_hash(s) for s in SAMPLES]
    here.append(stable_hash({"tags": {"x", "y", "z"}}))
    script = (
        "import json\n"
        "from mast_otel.wire.hashing import stable_hash\n"
        f"samples = json.loads({payload!r})\n"
        "print(json.dumps([stable_hash(s) for s in samples] + [stable_hash({'tags': {'z', 'y', 'x'}})]))"
    )
    for seed in ("0", "1", "12345"):
        assert json.loads(_run(script, PYTHONHASHSEED=seed)) == here
    assert here[0] == here[1]  # key order does not matter
    assert here[2] == stable_hash({"resource": "pods"})  # JSON text hashes like its value
    assert len(set(here[1:])) == len(here) - 1
