"""What writing a diagnosis's JSON texts costs the store, as ratios in this process.

    .venv/bin/python benchmarks/bench_store_json.py [--traces N]

Per run, the texts ``DiagnosisStore.save_many`` writes (the step list, the findings, the metric
accounting) by ``service/compact_json`` (orjson where it writes the standard encoder's bytes)
against ``json.dumps(..., separators=(",", ":"))``, checked equal first; and the whole save of
the run (step list built, texts written, SQLite in batches of 50), for scale. Times are this
process's CPU time, so waits for a shared core do not count.

Workload: bench_decode's realistic agent runs (26 spans each), decoded, assembled and diagnosed
by an ``IngestStage`` as the server does. Best of five.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench_decode import BATCH as SPANS_PER_REQUEST, agent_traces
from bench_ingest import config_for
from bench_run_steps import best as run_steps_best
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.service.store.compact_json import dumps
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.outputs.base import Batch, DiagnosedRun
from mast_otel.processors.service.store.run_steps import RunStep, step_rows, steps_json
from mast_otel.processors.service.store.diagnoses import _FINDING_FIELDS, DiagnosisStore

BATCH = 50


def best(fn, repeats: int = 5) -> float:
    return run_steps_best(fn, repeats, time.process_time)


def standard(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


class Capture(Lifecycle):
    """An exporter that keeps what the merge stage hands the outputs."""

    name = "capture"

    def __init__(self) -> None:
        self.runs: list[DiagnosedRun] = []

    def export(self, batch: Batch) -> None:
        self.runs += batch.runs


def diagnosed(traces: int, folder: Path) -> list[DiagnosedRun]:
    """``traces`` runs through decode, assembly and rule diagnosis, as the sweeper exports them."""
    spans = agent_traces(traces)
    config = config_for(folder, grace_seconds=0)
    stage = IngestStage(config, Metrics(config.metrics), DiagnosisStore(folder / "diagnosed.sqlite"))
    capture = Capture()
    stage.add_exporter(capture)
    for i in range(0, len(spans), SPANS_PER_REQUEST):
        body = encode_spans(spans[i:i + SPANS_PER_REQUEST]).SerializeToString()
        stage.ingest(decode_protobuf(body, stage.decode_options), "http")
    stage.sweep()
    stage.store.close()
    return capture.runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        items = diagnosed(args.traces, Path(tmp))
    runs = [item.run for item in items]
    diagnoses = [item.diagnosis for item in items]
    accounting = [item.accounting for item in items]
    steps = [step_rows(r) for r in runs]

    def texts_standard() -> list[str]:
        return [text for listed, d, a in zip(steps, diagnoses, accounting) for text in (
            standard({"fields": RunStep._fields, "rows": listed}),
            standard([{name: getattr(f, name) for name in _FINDING_FIELDS} for f in d.findings]),
            standard({"modes": a.modes, "outcome": a.outcome, "outcome_modes": a.outcome_modes,
                      "interventions": a.interventions}))]

    def texts_compact() -> list[str]:
        return [text for listed, d, a in zip(steps, diagnoses, accounting) for text in (
            dumps({"fields": RunStep._fields, "rows": listed}), dumps(d.findings), dumps(
                {"modes": a.modes, "outcome": a.outcome, "outcome_modes": a.outcome_modes,
                 "interventions": a.interventions}))]

    assert texts_compact() == texts_standard(), "compact_json wrote other bytes than the standard encoder"
    slow, fast = best(texts_standard) / len(runs), best(texts_compact) / len(runs)

    with tempfile.TemporaryDirectory() as tmp:
        rounds = iter(range(100))

        def save() -> None:
            store = DiagnosisStore(Path(tmp) / f"{next(rounds)}.sqlite")
            for i in range(0, len(runs), BATCH):
                listed = {r.trace_id: steps_json(step_rows(r)) for r in runs[i:i + BATCH]}
                store.save_many([(d, a) for d, a in zip(diagnoses[i:i + BATCH], accounting[i:i + BATCH])], listed)
            store.close()

        whole = best(save) / len(runs)
    print(f"{len(steps[0])} steps/run: JSON texts {slow * 1e6:.0f} µs/run with json.dumps, {fast * 1e6:.0f} µs "
          f"with compact_json ({slow / fast:.1f}x faster); the whole save now {whole * 1e6:.0f} µs/run "
          f"(it would be {(whole - fast + slow) * 1e6:.0f} with json.dumps)")


if __name__ == "__main__":
    main()
