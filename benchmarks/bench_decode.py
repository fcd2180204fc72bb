"""What decoding + normalizing OTLP costs, against the bare protobuf decode floor.

    .venv/bin/python benchmarks/bench_decode.py [--traces N] [--seconds S] [--baseline OTHER/decode.py]

Workload: realistic agent traces written with the OpenTelemetry SDK in the vocabulary
mast-otel's instrumentation uses (one agent span, 10 model calls, 15 tool calls per trace,
content capture off), OTLP-encoded in batches of 512 spans as the SDK's batch processor
sends them. Measured in one process, alternating, best of several rounds:

- floor: ``ExportTraceServiceRequest.FromString`` + each span's attributes read into a dict;
- ours: ``decode_protobuf`` (ids, validation, attributes, normalization, ``Span`` records);
- ours over OTLP/JSON, for reference;
- bytes per normalized ``Span`` held in memory (tracemalloc), content off;
- with ``--baseline``: another build's ``decode.py`` (``git show main:processors/ingest/decode.py``)
  loaded beside this one, timed alternately on the same bodies, and the ratio of the two.

``--typescript`` measures instead the TypeScript corpus's recorded runs (tests/typescript/corpus,
content on and off), one workload per setup and variant, each as decode against its own floor: the Vercel AI SDK's
``ai.*`` spans (read by their own normalizer) against the same scenarios' GenAI spans (AI SDK 7's
default integration, read by the GenAI normalizer).

``--corpus`` measures instead ``decode_protobuf`` alone over the content-on corpus requests that
bench_content_path.py ingests (tests/frameworks/corpus and tests/teams/corpus, repeated to ``--traces``
runs, fresh trace ids each round), with the service's decode options: CPU seconds per round, whole
(``decode``), with normalization left out (``bare``: ``normalize_into`` replaced by a no-op, so
what is left is the decoder's own work), and with tool content's hashes and failure reading left out
(``unhashed``: ``content_hash`` and ``failure_in`` answering a constant, so ``decode`` less ``unhashed``
is what they cost, their parsing of the values included). With ``--baseline-python OTHER/.venv/bin/python`` the same
rounds run under another build's interpreter (its package, this checkout's corpus and script),
process by process alternating, and each figure's median and the median of the per-process ratios
are printed. The first round of each process is left out.

    .venv/bin/python benchmarks/bench_decode.py --corpus [--traces 600] [--rounds 4] [--pairs 3] \
        [--baseline-python /work/main/.venv/bin/python]
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel.wire import attributes as A
from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.ingest.decode import decode_json, decode_protobuf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.ingest.otlp import otlp_json_of  # noqa: E402  (the tests' OTLP/JSON encoder)
from alternating import alternate, median_of, pair_ratios  # noqa: E402  (run as a script: its folder is on the path)

BATCH = 512
TOOLS = ("kubectl_get", "kubectl_logs", "kubectl_describe", "prometheus_query", "restart_pod")


def agent_traces(count: int) -> list:
    """Finished SDK spans for ``count`` agent runs (26 spans each)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "sre-agent", "k8s.namespace.name": "agents"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("mast_otel.instrumentation", "0.1.0")
    for run in range(count):
        agent = {
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.GEN_AI_AGENT_NAME: "sre-triage",
            A.GEN_AI_CONVERSATION_ID: f"conv-{run}",
            A.MAST_TASK_MAX_STEPS: 30,
            A.MAST_TASK_CONSTRAINTS: ["read_only"],
            A.MAST_AGENT_ALLOWED_TOOLS: list(TOOLS[:4]),
        }
        with tracer.start_as_current_span("invoke_agent sre-triage", attributes=agent) as root:
            step = 0
            for call in range(10):
                tool = TOOLS[call % len(TOOLS)]
                with tracer.start_as_current_span(
                    "chat gpt-4o-mini",
                    attributes={
                        A.GEN_AI_OPERATION_NAME: A.OP_CHAT,
                        A.GEN_AI_PROVIDER_NAME: "openai",
                        A.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
                        A.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18",
                        A.GEN_AI_RESPONSE_ID: f"chatcmpl-{run}-{call}",
                        A.GEN_AI_USAGE_INPUT_TOKENS: 1200 + 150 * call,
                        A.GEN_AI_USAGE_OUTPUT_TOKENS: 80,
                        A.GEN_AI_RESPONSE_FINISH_REASONS: ["tool_calls"],
                        A.MAST_STEP_INDEX: step,
                        A.MAST_LLM_INPUT_MESSAGE_COUNT: 2 + 3 * call,
                        A.MAST_LLM_REQUESTED_TOOLS: [tool],
                    },
                ):
                    pass
                step += 1
                for _ in range(2 if call % 2 else 1):  # 15 tool calls over 10 model calls
                    with tracer.start_as_current_span(
                        f"execute_tool {tool}",
                        attributes={
                            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
                            A.GEN_AI_TOOL_NAME: tool,
                            A.GEN_AI_TOOL_CALL_ID: f"call_{run}_{step}",
                            A.GEN_AI_TOOL_TYPE: "function",
                            A.MAST_STEP_INDEX: step,
                            A.MAST_TOOL_KIND: "write" if tool == "restart_pod" else "read",
                            A.MAST_TOOL_ARGS_HASH: stable_hash({"tool": tool, "step": step % 4}),
                            A.MAST_TOOL_RESULT_HASH: stable_hash({"run": run, "step": step}),
                        },
                    ):
                        pass
                    step += 1
            root.set_attribute(A.MAST_RUN_TERMINATION_REASON, "final_answer")
            root.set_attribute(A.MAST_RUN_CLAIMED_SUCCESS, True)
    return list(exporter.get_finished_spans())


def floor(body: bytes) -> int:
    """The least any decoder pays: parse, and read every span's attributes into a dict."""
    count = 0
    for rs in ExportTraceServiceRequest.FromString(body).resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                attrs = {}
                for kv in span.attributes:
                    value = kv.value
                    kind = value.WhichOneof("value")  # None: an empty value, which some instrumentations write
                    attrs[kv.key] = getattr(value, kind) if kind is not None else None
                count += 1
    return count


def best_rate(fn: Callable[[bytes], object], bodies: list[bytes], spans: int, seconds: float, rounds: int = 5) -> float:
    """Spans per second, best of ``rounds`` runs of at least ``seconds / rounds`` each."""
    best = 0.0
    for _ in range(rounds):
        done, start = 0, time.perf_counter()
        while True:
            for body in bodies:
                fn(body)
            done += spans
            elapsed = time.perf_counter() - start
            if elapsed >= seconds / rounds:
                break
        best = max(best, done / elapsed)
    return best


def bytes_per_span(bodies: list[bytes]) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [decode_protobuf(body).spans for body in bodies]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return held / sum(len(spans) for spans in kept)


TYPESCRIPT_CORPUS = Path(__file__).resolve().parents[1] / "tests" / "typescript" / "corpus"
_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def corpus_body(folder: Path) -> tuple[bytes, int]:
    """One setup's recorded runs (one variant) as one OTLP protobuf body, and its span count."""
    resource_spans = [rs for path in sorted(folder.glob("*.json")) if path.name != "manifest.json"
                      for rs in json.loads(path.read_text())["resourceSpans"]]
    request = json_format.ParseDict(_base64_ids({"resourceSpans": resource_spans}), ExportTraceServiceRequest())
    return request.SerializeToString(), sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def _base64_ids(value):
    """Recorded files write ids in hex (as OTLP/JSON does); protobuf's JSON mapping wants base64."""
    if isinstance(value, dict):
        return {k: (base64.b64encode(bytes.fromhex(v)).decode() if k in _ID_KEYS and v else _base64_ids(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_base64_ids(v) for v in value]
    return value


def typescript(seconds: float) -> None:
    setups = ("ai-sdk-7", "ai-sdk-7-legacy", "ai-sdk-6", "mastra")
    for variant in ("", "no-content"):
        bodies = {setup: corpus_body(TYPESCRIPT_CORPUS / setup / variant) for setup in setups}
        rates = {(setup, kind): 0.0 for setup in setups for kind in ("floor", "ours")}
        for _ in range(5):  # alternate setups and sides, so drift in machine load hits all alike
            for setup, (body, spans) in bodies.items():
                for kind, fn in (("floor", floor), ("ours", decode_protobuf)):
                    rates[setup, kind] = max(rates[setup, kind], best_rate(fn, [body] * 10, spans * 10, seconds / 5))
        for setup, (body, spans) in bodies.items():
            ours, base = rates[setup, "ours"], rates[setup, "floor"]
            print(f"{setup:16} {variant or 'content':10} {spans:4} spans, {len(body) / spans:5.0f} bytes/span: floor {base:9,.0f} spans/s, "
                  f"decode_protobuf {ours:9,.0f} spans/s ({1e6 / ours:5.1f} µs/span), ratio to floor {ours / base:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, help="runs in the workload (40; with --corpus 600)")
    parser.add_argument("--seconds", type=float, default=1.5, help="time per measurement")
    parser.add_argument("--typescript", action="store_true", help="the TypeScript corpus's runs, per setup")
    parser.add_argument("--baseline", type=Path, help="another build's decode.py, timed against this one in this process")
    parser.add_argument("--corpus", action="store_true", help="decode_protobuf alone over the content-on corpus requests")
    parser.add_argument("--rounds", type=int, default=4, help="--corpus: rounds per process (the first left out)")
    parser.add_argument("--pairs", type=int, default=3, help="--corpus: processes per build, alternating")
    parser.add_argument("--baseline-python", help="--corpus: another build's python, e.g. OTHER/.venv/bin/python")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.typescript:
        typescript(args.seconds)
        return
    if args.corpus:
        args.traces = args.traces or 600
        if args.child:
            print(json.dumps(corpus_rounds(args.traces, args.rounds)))
        else:
            corpus(args)
        return

    args.traces = args.traces or 40
    finished = agent_traces(args.traces)
    requests = [encode_spans(finished[i : i + BATCH]) for i in range(0, len(finished), BATCH)]
    bodies = [r.SerializeToString() for r in requests]
    spans = len(finished)
    json_bodies = [otlp_json_of(r) for r in requests]

    floor_rate = ours_rate = json_rate = 0.0
    for _ in range(2):  # alternate, so drift in machine load hits both sides
        floor_rate = max(floor_rate, best_rate(floor, bodies, spans, args.seconds))
        ours_rate = max(ours_rate, best_rate(decode_protobuf, bodies, spans, args.seconds))
    json_rate = best_rate(decode_json, json_bodies, spans, args.seconds)
    per_span = bytes_per_span(bodies)
    body_bytes = sum(map(len, bodies)) / spans

    print(f"workload: {args.traces} traces x 26 spans = {spans} spans, {len(bodies)} bodies, {body_bytes:.0f} protobuf bytes/span")
    print(f"floor (FromString + attributes to dict): {floor_rate:12,.0f} spans/s")
    print(f"decode_protobuf (decode + normalize):    {ours_rate:12,.0f} spans/s  ratio to floor {ours_rate / floor_rate:.2f}")
    print(f"decode_json (OTLP/JSON):                 {json_rate:12,.0f} spans/s  ratio to floor {json_rate / floor_rate:.2f}")
    print(f"memory per normalized Span (content off): {per_span:,.0f} bytes")
    if args.baseline:
        compare(args.baseline, bodies, json_bodies, spans, args.seconds)


def compare(path: Path, bodies: list[bytes], json_bodies: list[bytes], spans: int, seconds: float) -> None:
    """This build's decoder against ``path`` 's, each loaded the same way (a module of its own,
    its own caches), alternating so machine load hits both alike."""
    import importlib.util

    def load(name: str, file: Path):
        spec = importlib.util.spec_from_file_location(name, file)
        module = sys.modules[name] = importlib.util.module_from_spec(spec)  # dataclasses look it up
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module

    ours, theirs = load("this_decode", Path(decode_protobuf.__code__.co_filename)), load("baseline_decode", path)
    for name, inputs in (("decode_protobuf", bodies), ("decode_json", json_bodies)):
        rates = {"ours": 0.0, "theirs": 0.0}
        for round_ in range(4):  # each goes first in half the rounds
            for side in (("ours", "theirs") if round_ % 2 else ("theirs", "ours")):
                module = ours if side == "ours" else theirs
                rates[side] = max(rates[side], best_rate(getattr(module, name), inputs, spans, seconds))
        ours_rate, theirs_rate = rates["ours"], rates["theirs"]
        print(f"{name}: this build {ours_rate:,.0f} spans/s, baseline {theirs_rate:,.0f} spans/s, "
              f"ratio {ours_rate / theirs_rate:.3f}")

CORPORA = [Path(__file__).resolve().parents[1] / "tests" / name / "corpus" for name in ("frameworks", "teams")]


def corpus_rounds(traces: int, rounds: int) -> list[dict[str, float]]:
    """This interpreter's build: each round's CPU seconds decoding every corpus request, whole,
    bare (normalization replaced by a no-op) and unhashed (content hashes and failure reading
    answering a constant), in a different order each round."""
    from bench_end_to_end import corpus_requests
    from bench_ingest import bodies_with_fresh_ids, config_for

    from mast_otel.processors.ingest import decode as decoder
    from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
    from mast_otel.processors.service.store.diagnoses import DiagnosisStore
    from mast_otel.processors.service.telemetry.metrics import Metrics

    template, spans, _ = corpus_requests(CORPORA, traces)
    with tempfile.TemporaryDirectory() as tmp:
        config = config_for(Path(tmp))
        store = DiagnosisStore(config.store.path)
        options = IngestStage(config, Metrics(config.metrics), store).decode_options  # the service's
        store.close()
    from mast_otel.processors.ingest.normalize import common

    normalize_into, content_hash, failure_in = decoder.normalize_into, common.content_hash, common.failure_in
    variants = ("decode", "bare", "unhashed")
    out = []
    for r in range(rounds):
        bodies = bodies_with_fresh_ids(template, 9000 + r)
        figures: dict[str, float] = {"spans": spans}
        for variant in variants[r % 3:] + variants[: r % 3]:
            decoder.normalize_into = (lambda *_: False) if variant == "bare" else normalize_into
            if variant == "unhashed":
                common.content_hash, common.failure_in = (lambda *_: "0"), (lambda *_, **__: None)
            gc.collect()
            started = time.process_time()
            for body in bodies:
                decoder.decode_protobuf(body, options)
            figures[variant] = time.process_time() - started
            common.content_hash, common.failure_in = content_hash, failure_in
        decoder.normalize_into = normalize_into
        out.append(figures)
    return out


def corpus(args: argparse.Namespace) -> None:
    """``--corpus``: this build, and the baseline's when given, process by process alternating."""
    builds = {"this": sys.executable, **({"baseline": args.baseline_python} if args.baseline_python else {})}
    kept = alternate(builds, args.pairs, __file__, ["--corpus", "--traces", str(args.traces), "--rounds", str(args.rounds)])
    spans = kept["this"][0][0]["spans"]
    print(f"{spans:.0f} spans a round, {args.pairs} processes per build, {args.rounds - 1} rounds each counted")
    for what in ("decode", "bare", "unhashed"):
        line = []
        for name in builds:
            seconds = median_of(kept[name], what)
            line.append(f"{name} {seconds:.3f} s ({1e6 * seconds / spans:.1f} µs/span)")
        if "baseline" in builds:
            line.append(pair_ratios(kept, what, baseline_over_this=False))
        print(f"{what}: " + "; ".join(line))

if __name__ == "__main__":
    main()
