"""Streaming assembly through the running service: late spans, idle runs, caps, eviction, flush."""

from __future__ import annotations

import os

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

from mast_otel.wire import attributes as A
from mast_otel.processors import detectors
from mast_otel.processors.model import Finding, Role, Run, Span
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from tests.service.support import emit_run, make_config, metric, provider_for, running, wait_for
from tests.service.test_receivers import post, proto_span, request_of

TOOL = {A.GEN_AI_OPERATION_NAME: "execute_tool", A.GEN_AI_TOOL_NAME: "kubectl_logs", A.MAST_TOOL_ARGS_HASH: "same"}


def test_late_spans_rediagnose_without_double_counting(config):
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, ids = emit_run(provider, tools=(("kubectl_logs", "same"),) * 2)
        provider.shutdown()
        first = wait_for(lambda: server.store.get(trace_id))
        assert first.modes == [] and first.revision == 0
        tid, parent = bytes.fromhex(trace_id), bytes.fromhex(ids["agent"])
        late = proto_span(tid, os.urandom(8), name="execute_tool kubectl_logs", parent=parent, **TOOL)
        assert post(server, request_of(late).SerializeToString()).status_code == 200
        second = wait_for(lambda: (d := server.store.get(trace_id)) and d.revision == 1 and d)
        assert second.modes == ["FM-1.3"] and second.span_count == first.span_count + 1
        late2 = proto_span(tid, os.urandom(8), name="execute_tool kubectl_logs", parent=parent, **TOOL)
        post(server, request_of(late2).SerializeToString())
        wait_for(lambda: server.store.get(trace_id).revision == 2)
        assert metric(server, "mast_late_spans_total", reason="rediagnosed") == 2
        assert metric(server, "mast_traces_total") == 1
        assert metric(server, "mast_failure_mode_traces_total", mode="FM-1.3") == 1
        assert metric(server, "mast_failure_modes_per_trace_count") == 1
        assert server.ingest.get_run(trace_id).span(late2.span_id.hex()) is not None


def test_a_rediagnosis_replaces_the_runs_modes_in_the_store(config):
    """A first diagnosis writes its modes without looking for old ones; a re-diagnosis replaces
    them, so a mode it no longer finds stops matching the run (``?mode=``, the overview counts)."""
    def by_tool_count(run: Run, _config=None) -> list[Finding]:
        mode = "FM-1.3" if len(run.tool_calls) < 3 else "FM-2.2"
        return [Finding(mode, 0.9, f"{len(run.tool_calls)} tool calls", (run.spans[0].span_id,), detector="test.count")]

    with running(config, diagnose=by_tool_count) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, ids = emit_run(provider, tools=(("kubectl_logs", "a"), ("kubectl_logs", "b")))
        other, _ = emit_run(provider, tools=(("kubectl_logs", "c"),))
        provider.shutdown()
        store = server.store
        wait_for(lambda: store.get(trace_id) and store.get(other))
        assert sorted(d.trace_id for d in store.query(mode="FM-1.3")) == sorted([trace_id, other])
        late = proto_span(bytes.fromhex(trace_id), os.urandom(8), name="execute_tool kubectl_logs",
                          parent=bytes.fromhex(ids["agent"]), **TOOL)
        assert post(server, request_of(late).SerializeToString()).status_code == 200
        wait_for(lambda: store.get(trace_id).revision == 1)
        assert [d.trace_id for d in store.query(mode="FM-1.3")] == [other]
        assert [d.trace_id for d in store.query(mode="FM-2.2")] == [trace_id]
        assert sorted((m.mode, m.runs) for m in store.counts()[1]) == [("FM-1.3", 1), ("FM-2.2", 1)]


def test_late_spans_after_retention_are_dropped_and_counted(tmp_path):
    config = make_config(tmp_path, assembly={"retention_seconds": 0})
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, ids = emit_run(provider)
        provider.shutdown()
        wait_for(lambda: server.store.get(trace_id))
        late = proto_span(bytes.fromhex(trace_id), os.urandom(8), parent=bytes.fromhex(ids["agent"]))
        post(server, request_of(late).SerializeToString())
        assert metric(server, "mast_late_spans_total", reason="dropped") == 1
        assert server.ingest.in_flight == 0 and server.store.get(trace_id).revision == 0
        assert server.ingest.get_run(trace_id) is None


def test_a_run_whose_root_never_arrives_is_abandoned_and_diagnosed_on_what_arrived(tmp_path):
    config = make_config(tmp_path, assembly={"idle_timeout_seconds": 0.5})
    with running(config, diagnose=detectors.diagnose, live_detection=detectors.LiveDetection) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, ids = emit_run(provider, end_root=False)  # the agent process died mid-run
        provider.shutdown()
        d = wait_for(lambda: server.store.get(trace_id))
        assert d.completion == "abandoned" and d.root_span_id is None and d.span_count == 4
        assert "FM-1.5" not in d.modes and not d.fatal  # a missing end is no failure mode by itself
        assert metric(server, "mast_traces_completed_total", completion="abandoned") == 1
        assert metric(server, "mast_failure_mode_traces_total", mode="FM-1.5") == 0


def test_per_trace_caps_drop_spans_with_a_reason(tmp_path):
    config = make_config(tmp_path, assembly={"max_spans_per_trace": 3, "max_bytes_per_trace": 1_000_000, "span_overhead_bytes": 600})
    tid = os.urandom(16)
    with running(config) as server:
        spans = [proto_span(tid, os.urandom(8), parent=b"\x07" * 8) for _ in range(5)]
        post(server, request_of(*spans).SerializeToString())
        assert metric(server, "mast_spans_rejected_total", reason="trace_span_limit") == 2
        assert metric(server, "mast_spans_received_total") == 3  # dropped spans are not also "received"
        # The agent span still gets in: a runaway run keeps its root and hints.
        root = proto_span(tid, b"\x07" * 8, name="invoke_agent a", **{A.GEN_AI_OPERATION_NAME: "invoke_agent"})
        post(server, request_of(root).SerializeToString())
        d = wait_for(lambda: server.store.get(tid.hex()))
        assert d.span_count == 4 and d.root_span_id == "07" * 8
    small = make_config(tmp_path, assembly={"max_bytes_per_trace": 1300, "span_overhead_bytes": 450})
    with running(small) as server:
        other = os.urandom(16)  # a new run (the first one is still retained for late spans, across the restart too)
        post(server, request_of(*(proto_span(other, os.urandom(8), parent=b"\x07" * 8) for _ in range(3))).SerializeToString())
        assert metric(server, "mast_spans_rejected_total", reason="trace_byte_limit") == 1


def _open_trace(server, n_spans: int) -> bytes:
    tid = os.urandom(16)
    post(server, request_of(*(proto_span(tid, os.urandom(8), parent=b"\x07" * 8) for _ in range(n_spans))).SerializeToString())
    return tid


def test_eviction_oldest_first_and_largest_first(tmp_path):
    oldest = make_config(tmp_path / "a", assembly={"max_traces_in_flight": 2})
    with running(oldest) as server:
        first, second, third = (_open_trace(server, n) for n in (1, 3, 1))
        d = wait_for(lambda: server.store.get(first.hex()))
        assert d.completion == "evicted"
        assert server.store.get(second.hex()) is None and server.store.get(third.hex()) is None
        assert metric(server, "mast_traces_evicted_total", reason="max_traces_in_flight") == 1
        assert metric(server, "mast_traces_in_flight") == 2
    largest = make_config(tmp_path / "b", assembly={"max_traces_in_flight": 2, "eviction_policy": "largest_first"})
    with running(largest) as server:
        first, second, third = (_open_trace(server, n) for n in (1, 3, 1))
        wait_for(lambda: server.store.get(second.hex()))
        assert server.store.get(first.hex()) is None


def test_shutdown_flushes_buffered_runs_and_diagnoses_survive_restart(config):
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        open_run, _ = emit_run(provider, end_root=False, tools=(("kubectl_logs", "same"),) * 3)
        done_run, _ = emit_run(provider)
        provider.shutdown()
        wait_for(lambda: server.store.get(done_run))
        assert server.store.get(open_run) is None
    store = DiagnosisStore(config.store.path)
    flushed = store.get(open_run)
    assert flushed.completion == "shutdown" and flushed.modes == ["FM-1.3"]
    store.close()
    with running(config) as server:  # a new server on the same file
        import httpx

        assert httpx.get(f"{server.http_url}/v1/diagnoses/{done_run}").status_code == 200
        assert httpx.get(f"{server.http_url}/v1/diagnoses").json()["total"] == 2
        # A late span for a run diagnosed before the restart revives it (the log kept its spans):
        # re-diagnosed with every span, not counted as a new run.
        late = proto_span(bytes.fromhex(done_run), os.urandom(8))  # parentless: completes after grace
        post(server, request_of(late).SerializeToString())
        d = wait_for(lambda: (d := server.store.get(done_run)) is not None and d.span_count == 6 and d)
        assert d.revision == 1 and metric(server, "mast_late_spans_total", reason="rediagnosed") == 1
        assert metric(server, "mast_traces_total") == 0


def test_a_parentless_root_that_arrives_first_still_completes_its_run():
    """An application span around the agent (another tracer) often ends, and is exported, before
    the agent-related spans reach the processor; the run must complete by its root, not idle out."""
    from mast_otel.processors.config import AssemblyConfig
    from mast_otel.processors.model import Role, Span
    from mast_otel.processors.service.pipeline.assembler import Assembler

    assembler = Assembler(AssemblyConfig(grace_seconds=0.0, idle_timeout_seconds=60))
    trace = "ab" * 16
    root = Span(trace, "01" * 8, None, "handle request", 1, 10)
    call = Span(trace, "02" * 8, "01" * 8, "chat gpt-4o-mini", 2, 5, role=Role.LLM)
    tool = Span(trace, "03" * 8, "01" * 8, "execute_tool get_pods", 6, 7, role=Role.TOOL)
    for order in ([root, call, tool], [call, root, tool]):
        assembler.add([order[0]], now=0.0)
        assembler.add(order[1:], now=0.0)
        done = assembler.due(now=1.0)
        assert [(c.buffer.trace_id, c.completion) for c in done] == [(trace, "root_ended")]
        assembler = Assembler(AssemblyConfig(grace_seconds=0.0, idle_timeout_seconds=60))


def test_a_sub_agent_ending_does_not_end_its_team():
    """A team's first agent span to end is a sub-agent's (or one turn's): the run waits for the team's
    root, or for team_grace_seconds of quiet, instead of being diagnosed half-way (and re-diagnosed)."""
    from mast_otel.processors.config import AssemblyConfig
    from mast_otel.processors.model import Role, Span
    from mast_otel.processors.service.pipeline.assembler import Assembler

    trace = "cd" * 16
    root = Span(trace, "01" * 8, None, "invoke_agent team", 1, 100, role=Role.AGENT, agent_name="team")
    turn = Span(trace, "02" * 8, "01" * 8, "invoke_agent coordinator", 2, 20, role=Role.AGENT, agent_name="coordinator")
    handoff = Span(trace, "03" * 8, "02" * 8, "handoff to operator", 10, 11, role=Role.TOOL, tool_name="handoff to operator")
    worker = Span(trace, "04" * 8, "01" * 8, "invoke_agent operator", 21, 50, role=Role.AGENT, agent_name="operator")
    assembler = Assembler(AssemblyConfig(grace_seconds=1.0, team_grace_seconds=30.0, idle_timeout_seconds=600))
    assembler.add([handoff, turn], now=0.0)
    assert assembler.due(now=5.0) == []  # quiet past grace: a single agent's run would be done by now
    assembler.add([worker], now=6.0)
    assembler.add([root], now=7.0)
    done = assembler.due(now=8.5)  # the parentless root arrived: grace, not team grace
    assert [(c.buffer.trace_id, c.completion, len(c.buffer.spans)) for c in done] == [(trace, "root_ended", 4)]

    alone = Assembler(AssemblyConfig(grace_seconds=1.0, team_grace_seconds=30.0, idle_timeout_seconds=600))
    alone.add([handoff, turn, worker], now=0.0)  # the team's root never reaches the processor
    assert alone.due(now=29.0) == []
    assert [c.completion for c in alone.due(now=31.0)] == ["root_ended"]

    single = Assembler(AssemblyConfig(grace_seconds=1.0, team_grace_seconds=30.0, idle_timeout_seconds=600))
    single.add([Span(trace, "05" * 8, "09" * 8, "invoke_agent a", 1, 9, role=Role.AGENT, agent_name="a")], now=0.0)
    assert len(single.due(now=1.5)) == 1  # one agent under an unseen parent: its run ends with it, as before


def test_a_late_span_below_a_span_not_kept_still_reaches_its_agent():
    """The parent links of spans that are not kept outlive the run's first diagnosis, so a late step
    under a turn span that came before is still its agent's when the run is re-diagnosed."""
    from mast_otel.processors.config import AssemblyConfig
    from mast_otel.processors.model import Role, Span
    from mast_otel.processors.service.pipeline.assembler import Assembler

    trace = "ee" * 16
    agent = Span(trace, "01" * 8, None, "invoke_agent a", 1, 100, role=Role.AGENT, agent_name="a")
    turn = Span(trace, "02" * 8, "01" * 8, "turn", 2, 50)  # neither agent, model nor tool: not kept
    first = Span(trace, "03" * 8, "02" * 8, "chat m", 3, 10, role=Role.LLM)
    late = Span(trace, "04" * 8, "02" * 8, "chat m", 11, 20, role=Role.LLM)
    assembler = Assembler(AssemblyConfig(grace_seconds=0.0, idle_timeout_seconds=60, retention_seconds=60))
    assembler.add([first, turn, agent], now=0.0)
    (done,) = assembler.due(now=1.0)
    assert done.buffer.run(done.completion).agent_of(first) is agent
    assembler.add([late], now=2.0)  # revives the retained run
    (again,) = assembler.due(now=3.0)
    run = again.buffer.run(again.completion)
    assert [run.agent_of(s).agent_name for s in run.steps] == ["a", "a"]


def test_a_team_revived_by_late_spans_waits_grace_once_its_root_arrived():
    """A team's run diagnosed by its parentless root and revived by a late span still has its
    root: it completes after ``grace_seconds`` of quiet, not ``team_grace_seconds`` (while it waits,
    the stored diagnosis lacks what the late spans show). The same when the root was a
    non-agent span that arrived before any agent-related span."""
    from mast_otel.processors.config import AssemblyConfig
    from mast_otel.processors.model import Role, Span
    from mast_otel.processors.service.pipeline.assembler import Assembler

    trace = "ef" * 16
    config = AssemblyConfig(grace_seconds=1.0, team_grace_seconds=30.0, idle_timeout_seconds=600, retention_seconds=600)
    for root in (Span(trace, "01" * 8, None, "invoke_agent team", 1, 100, role=Role.AGENT, agent_name="team"),
                 Span(trace, "01" * 8, None, "handle request", 1, 100)):
        turn = Span(trace, "02" * 8, "01" * 8, "invoke_agent coordinator", 2, 20, role=Role.AGENT, agent_name="coordinator")
        worker = Span(trace, "04" * 8, "01" * 8, "invoke_agent operator", 21, 50, role=Role.AGENT, agent_name="operator")
        late = Span(trace, "05" * 8, "04" * 8, "execute_tool get_pods", 22, 23, role=Role.TOOL, tool_name="get_pods")
        assembler = Assembler(config)
        assembler.add([root], now=0.0)
        assembler.add([turn, worker], now=0.0)
        assert [c.completion for c in assembler.due(now=1.5)] == ["root_ended"]
        assembler.add([late], now=2.0)
        done = assembler.due(now=3.5)
        assert [(c.completion, c.buffer.spans[-1] is late) for c in done] == [("root_ended", True)]


def test_a_revived_run_starts_from_its_spans_as_they_arrived():
    """A diagnosis re-links parents, takes wrapper calls and answer tools out of the steps, gives a
    delegation tool's calls a stand-in agent and fills hints, in place on the run's spans; a run
    revived by late spans must start from its spans as they arrived, or it is diagnosed from what
    a diagnosis of part of it made of them. Every field of every span, on both corpora: a
    diagnosis that changes a field ``model.arrived_state`` does not keep fails here."""
    import copy
    import dataclasses

    from mast_otel.processors.config import AssemblyConfig
    from mast_otel.processors.detectors import rule_findings
    from mast_otel.processors.ingest.decode import decode_json
    from mast_otel.processors.service.pipeline.assembler import Assembler
    from tests.frameworks.corpus_files import recordings
    from tests.teams.corpus_files import recordings as team_recordings

    assembler = Assembler(AssemblyConfig(grace_seconds=0.0, idle_timeout_seconds=60, retention_seconds=60))
    for recording in recordings() + team_recordings():
        for line in recording.path.read_text().splitlines():
            assembler.add(decode_json(line).spans, now=0.0)
    done = assembler.due(now=1.0)
    assert len(done) > 100
    arrived = {c.buffer.trace_id: copy.deepcopy(c.buffer.spans) for c in done}
    for completed in done:
        rule_findings(completed.buffer.run(completed.completion))
    names = [f.name for f in dataclasses.fields(Span)]
    changed, unchanged = set(), set()
    for completed in done:
        trace = completed.buffer.trace_id
        changed |= {name for kept, before in zip(completed.buffer.spans, arrived[trace]) for name in names
                    if getattr(kept, name) != getattr(before, name)}
        late = Span(trace, "fe" * 8, arrived[trace][0].span_id, "execute_tool late", 1, 2, role=Role.TOOL)  # revives the run
        assembler.add([late], now=2.0)
        revived = assembler.in_flight[trace].spans[:-1]
        unchanged |= {name for now, before in zip(revived, arrived[trace]) for name in names
                      if getattr(now, name) != getattr(before, name)}
    assert changed  # the diagnosis did change the spans it read
    assert unchanged == set()
