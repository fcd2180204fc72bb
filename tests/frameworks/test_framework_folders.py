"""Framework knowledge lives in processors/frameworks/<family>/ and nowhere else.

Two checks: no product code outside the family folders names a framework (the registry's own
list of names and spellings), and a framework added as a new folder, with no edit elsewhere,
is read: its limit error, its handoff tool and its wrapper span.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from mast_otel.processors import frameworks, team
from mast_otel.processors.config import HintsConfig
from mast_otel.processors.hints import derive_hints
from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.model import Run

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("processors", "instrumentation", "src")
FOLDER = ROOT / "processors" / "frameworks"
# Files that may name a framework, each with why it is not framework knowledge of the processor's.
ALLOWED = {
    "instrumentation/guards/adapters/": "agent-side guard adapters: they hook into a framework's runtime inside "
                                        "the user's agent process, where the processor's packages are not loaded",
    "processors/ingest/who_and_when.py": "reads the Who&When data set, whose logs are AG2 group chats: "
                                         "a data set's file format, not spans",
    "processors/detectors/content_signals.py": "cites the MAST-Data AG2 split its thresholds were measured on: "
                                               "a data set's name",
}


def _names_pattern() -> re.Pattern[str]:
    names = sorted({n for n in frameworks.registry().names}, key=len, reverse=True)
    return re.compile(r"(?<![A-Za-z0-9])(%s)(?![A-Za-z0-9])" % "|".join(map(re.escape, names)), re.IGNORECASE)


def _product_files() -> list[Path]:
    return sorted(p for top in PRODUCT for p in (ROOT / top).rglob("*.py"))


def _allowed(relative: str) -> bool:
    return any(relative == a or (a.endswith("/") and relative.startswith(a)) for a in ALLOWED)


def test_the_registry_knows_every_family_folder():
    folders = sorted(p.name for p in FOLDER.iterdir() if (p / "__init__.py").is_file())
    assert [f.name for f in frameworks.registry().families] == folders
    assert len(folders) >= 12


def test_every_table_field_reaches_the_registry():
    """A field added to a family's table is merged, or the shared code could never read it."""
    from dataclasses import fields

    from mast_otel.processors.frameworks.table import Framework, Registry

    merged = {f.name for f in fields(Registry)}
    own = {"name", "spellings", "dialect", "member_of", "member_marker"}  # merged as dialects, members, names
    assert {f.name for f in fields(Framework)} - own <= merged
    assert {"dialects", "members"} <= merged


def test_no_framework_is_named_outside_its_folder():
    """Code, comments and docstrings alike: a framework's words belong in its folder."""
    pattern = _names_pattern()
    found = []
    for path in _product_files():
        relative = path.relative_to(ROOT).as_posix()
        if path.is_relative_to(FOLDER) or _allowed(relative):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found += [f"{relative}:{number}: {m.group(0)}" for m in pattern.finditer(line)]
    assert found == []


def test_each_allowed_file_still_needs_its_entry():
    """An entry that no longer matches anything is dropped, so the list stays short and true."""
    pattern = _names_pattern()
    for allowed in ALLOWED:
        paths = [p for p in _product_files() if p.relative_to(ROOT).as_posix().startswith(allowed)]
        assert any(pattern.search(p.read_text()) for p in paths), allowed


def test_a_family_folder_names_only_itself_in_code():
    """A family's code may cite others in prose, but its tables hold its own words: the
    spellings of each family appear in no other family's ``spellings``."""
    owners: dict[str, str] = {}
    for family in frameworks.registry().families:
        for name in (family.name, *family.spellings):
            assert owners.setdefault(name.lower(), family.name) == family.name, name


TOY = '''
"""Toyframe: a made-up framework for the registry's test."""

from mast_otel.processors.frameworks.table import Framework

FRAMEWORK = Framework(
    name="toyframe",
    spellings=("ToyFrame",),
    limit_errors=(r"\\bToyBudgetSpent\\b",),
    handoff_tools=frozenset({"pass_baton"}),
    handoff_target_keys=("baton_for",),
    wrapper_agents=frozenset({"toy_crew"}),
)
'''


@pytest.fixture
def toy_framework(tmp_path):
    """A folder holding one more family package, added to the frameworks package's path."""
    (tmp_path / "toyframe").mkdir()
    (tmp_path / "toyframe" / "__init__.py").write_text(textwrap.dedent(TOY))
    frameworks.__path__.append(str(tmp_path))
    frameworks.reload()
    yield
    frameworks.__path__.remove(str(tmp_path))
    sys.modules.pop("mast_otel.processors.frameworks.toyframe", None)
    frameworks.reload()


def _toy_run() -> Run:
    """A GenAI trace through the OTel SDK: the toy's wrapper span around a coordinator that passes
    the baton to an operator; the wrapper ends on the toy's limit error."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("toy")

    def agent(name: str):
        return tracer.start_as_current_span(f"invoke_agent {name}", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name})

    def chat():
        with tracer.start_as_current_span("chat toy-model", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "toy-model",
                "gen_ai.response.finish_reasons": ["tool_calls"]}):
            pass

    with agent("toy_crew") as wrapper:
        with agent("coordinator"):
            chat()
            with tracer.start_as_current_span("execute_tool pass_baton", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "pass_baton",
                    "gen_ai.tool.call.arguments": '{"baton_for": "operator"}'}):
                pass
        with agent("operator"):
            chat()
            with tracer.start_as_current_span("execute_tool get_pods", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_pods"}):
                pass
        wrapper.set_status(Status(StatusCode.ERROR, "ToyBudgetSpent: the crew used its 8 rounds"))
    provider.shutdown()
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    decoded = decode_protobuf(body)
    assert decoded.rejected_count == 0
    return Run.from_spans(decoded.spans[0].trace_id, [s for s in decoded.spans if s.role is not None])


def _read(run: Run) -> tuple:
    derive_hints(run, HintsConfig())
    handoffs = team.team_of(run).handoffs
    return ([w.agent_name for w in run.wrappers], [a.agent_name for a in run.agent_spans],
            [(h.source, h.target, h.kind) for h in handoffs if h.kind == "transfer"],
            run.root.hints.termination_reason if run.root is not None and run.root.hints else None)


def test_without_the_toy_folder_its_words_mean_nothing():
    wrappers, agents, transfers, stopped = _read(_toy_run())
    assert (wrappers, transfers, stopped) == ([], [], None)
    assert agents == ["toy_crew", "coordinator", "operator"]  # the wrapper taken for an agent


def test_a_new_folder_is_read_with_no_edit_elsewhere(toy_framework):
    assert "toyframe" in [f.name for f in frameworks.registry().families]
    wrappers, agents, transfers, stopped = _read(_toy_run())
    assert wrappers == ["toy_crew"]  # the wrapper span is no agent
    assert agents == ["coordinator", "operator"]
    assert transfers == [("coordinator", "operator", "transfer")]  # its handoff tool, its target key
    assert stopped == "max_steps"  # its limit error, on the wrapper around the agents


def test_the_docs_name_every_table_field():
    """docs/frameworks/README.md says what each field of a family's table is for."""
    from dataclasses import fields

    from mast_otel.processors.frameworks.table import Framework

    page = (ROOT / "docs" / "frameworks" / "README.md").read_text(encoding="utf-8")
    assert [f.name for f in fields(Framework) if f.name not in ("name", "spellings", "member_marker")
            and f"`{f.name}`" not in page] == []
