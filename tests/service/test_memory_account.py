"""The memory account's parts in process: span sizes, bounded id sets, what gives way under pressure."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from mast_otel.processors.config import AssemblyConfig
from mast_otel.processors.model import Role, Span
from mast_otel.processors.service.pipeline.assembler import Assembler, span_bytes
from mast_otel.processors.service.memory.account import MemoryAccount, held_bytes


def _span(span_id: str, role: Role = Role.TOOL, parent: str | None = "ff" * 8, trace: str = "ab" * 16, **fields) -> Span:
    return Span(trace_id=trace, span_id=span_id, parent_span_id=parent, name="execute_tool t", start_ns=1, end_ns=2,
                role=role, **fields)


def test_long_strings_are_counted_and_wide_ones_exactly():
    short = span_bytes(_span("01" * 8), overhead=0)
    long_id = "x" * 200_000
    assert span_bytes(_span("01" * 8, conversation_id=long_id, tool_call_id=long_id), overhead=0) >= short + 400_000
    wide = "\U0001F600" + "x" * 9_999  # one character past U+FFFF: four bytes for each of them
    assert span_bytes(_span("01" * 8, tool_call_id=wide), overhead=0) >= 40_000
    assert held_bytes({"a": ("b" * 100, None)}) >= 100


@dataclass
class _Inner:
    text: str
    numbers: list[int] = field(default_factory=list)


@dataclass
class _Outer:
    name: str
    inner: _Inner
    by_key: dict[str, _Inner]
    pair: tuple[str, bytes]
    nothing: None = None


def test_dataclasses_are_counted_field_by_field_every_time():
    """Each field's strings and containers counted, nested ones too, and again on a second call
    (the field names are read once per type)."""
    inner = _Inner("t" * 1000, [1, 2, 3])
    outer = _Outer("n" * 500, inner, {"k": _Inner("v" * 2000)}, ("p" * 300, b"b" * 400))
    size = sys.getsizeof
    expected_inner = size(inner) + size(inner.text) + size(inner.numbers) + sum(map(size, inner.numbers))
    keyed = outer.by_key["k"]
    expected_keyed = size(keyed) + size(keyed.text) + size(keyed.numbers)
    expected = (size(outer) + size(outer.name) + expected_inner + size(outer.by_key) + size("k") + expected_keyed
                + size(outer.pair) + size(outer.pair[0]) + size(outer.pair[1]))
    assert held_bytes(outer) == expected
    outer.inner.text = "t" * 5000  # a second call reads the new values
    assert held_bytes(outer) == expected + 4000


def test_other_spans_of_an_open_run_are_remembered_up_to_the_span_cap():
    assembler = Assembler(AssemblyConfig(max_spans_per_trace=10))
    assembler.add([_span("00" * 8)], 0.0)  # opens the run (its agent never ends)
    others = [_span(f"{i:016x}", role=Role.OTHER) for i in range(1, 1001)]
    report = assembler.add(others, 0.0)
    assert report.accepted == 1000
    buf = assembler.in_flight["ab" * 16]
    assert len(buf.span_ids) == 20 and len(buf.links) == 19
    assert assembler.buffered_bytes < 20 * 2000


def test_pressure_from_other_holders_evicts_buffered_runs():
    elsewhere = [0]
    config = AssemblyConfig(max_buffered_bytes=100_000, pressure_eviction_seconds=1.0, retention_seconds=600,
                            span_overhead_bytes=1000)
    assembler = Assembler(config, held_elsewhere=lambda: elsewhere[0])
    assembler.add([_span(f"{i:016x}", trace=f"{i:032x}") for i in range(20)], 0.0)  # 20 open runs
    assert assembler.due(0.0) == [] and assembler.buffered_bytes > 15_000
    elsewhere[0] = 85_000  # a queue filled up: the account is over budget
    assert assembler.due(0.5) == []  # not yet: pressure_eviction_seconds
    evicted = assembler.due(2.0)
    assert evicted and assembler.buffered_bytes + elsewhere[0] <= 90_000
    assert assembler.held_bytes + elsewhere[0] <= 90_000  # the evicted runs are not retained past the budget


def test_the_account_adds_every_holder():
    account = MemoryAccount(1000)
    queue = account.charge("queue")
    account.register("buffers", lambda: 400)
    queue.add(500)
    assert account.held() == 900 and not account.over() and account.room() == 100
    queue.add(100)
    assert account.over() and account.by_holder() == {"queue": 600, "buffers": 400}


def test_remembered_diagnoses_are_charged_and_give_way_beyond_their_share():
    """Every diagnosed run is remembered (merge.remembered_runs, 100,000 by default) so late spans
    and outcomes count once: with agent names of 100,000 characters, or a flood of one-run
    sessions, they held far more than the budget, uncharged."""
    from mast_otel.processors.config import ProcessorConfig
    from mast_otel.processors.model import Diagnosis
    from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
    from mast_otel.processors.service.store.accounting import Accounting
    from mast_otel.processors.service.telemetry.metrics import Metrics

    budget = 4 * 1024 * 1024
    config = ProcessorConfig.model_validate({"assembly": {"max_buffered_bytes": budget}})
    stage = IngestStage(config, Metrics(), None)
    for i in range(100):
        stage.merge._remember(Diagnosis(f"{i:032x}", [], False, agent=f"{i:06d}" + "a" * 100_000), Accounting())
    held = stage.memory.by_holder()["remembered_runs"]
    assert 3 * budget // 32 <= held <= budget // 8  # charged, within its share: the oldest went
    assert stage.merge._last(f"{99:032x}") is not None and stage.merge._last(f"{0:032x}") is None


def _held_the_long_way(value: object) -> int:
    """``held_bytes`` as it read every value: the general checks in order, ``fields()`` asked each time."""
    import sys
    from dataclasses import fields, is_dataclass

    if value is None or value is True or value is False:
        return 0
    if isinstance(value, (str, bytes, int, float)):
        return sys.getsizeof(value)
    if isinstance(value, tuple) and not value and type(value) is tuple:
        return 0
    if isinstance(value, (tuple, list, set, frozenset)):
        return sys.getsizeof(value) + sum(map(_held_the_long_way, value))
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(map(_held_the_long_way, value.keys())) + sum(map(_held_the_long_way, value.values()))
    if is_dataclass(value):
        return sys.getsizeof(value) + sum(_held_the_long_way(getattr(value, f.name)) for f in fields(value)
                                          if f.metadata.get("held") != "elsewhere")
    return sys.getsizeof(value)


def test_held_bytes_reads_every_kind_of_value_as_the_general_checks_do():
    """The exact-type shortcuts and the kept field names count what the general checks count:
    subclasses of the exact types (an ``OrderedDict``, an enum of ints, a bool), dataclass
    instances and a dataclass itself, spans with their containers filled."""
    import enum
    from collections import OrderedDict, defaultdict

    from mast_otel.processors.model import RunHints

    class Level(enum.IntEnum):
        HIGH = 3

    class Words(list):
        pass

    values = [
        "x", b"yy", 7, 2.5, True, None, (), ("a", 1), ["a", ["b", {"c": 1.5}]], {"k": ("v", None)}, {1, 2}, frozenset({"a"}),
        OrderedDict(a=[1]), defaultdict(list, b=["c"]), Level.HIGH, Words(["a", "bb"]), RunHints(max_steps=3, constraints=["ro"]),
        RunHints, _span("01" * 8, tool_result="r" * 300, requested_tools=("a", "b"), hints=RunHints(final_answer="done")),
        [_span("02" * 8), {"nested": (RunHints(), [1, 2.0, "three"])}],
        # strings and None read in C: tuples of them, tool exchanges (call id -> such tuples), and what falls back
        ("stop", None, ""), (None,), ("é" * 3, "\U0001f600"), {"c1": ("h1", None, "r" * 500), "c2": ("h2", "x", None)},
        {"c1": ("h1",), "c2": ()}, {"c1": ("h1", 3)}, {1: ("a",)}, {"c1": ["h1"]}, {"c1": ("a", ("b",))}, {},
        _span("03" * 8, tool_exchanges={"call_1": ("a1", "r1", "result"), "call_2": (None, None, None)}),
    ]
    for value in values:
        assert held_bytes(value) == _held_the_long_way(value), value


def test_held_bytes_of_any_nesting_is_what_the_general_checks_count():
    """Property: strings, numbers, booleans and ``None`` counted in a container's or a dataclass's
    loop (without a call each) add up as the general checks do, at any depth."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30) | st.binary(max_size=10)

    def containers(inner: st.SearchStrategy) -> st.SearchStrategy:
        return (st.lists(inner, max_size=5) | st.lists(inner, max_size=5).map(tuple)
                | st.dictionaries(st.text(max_size=5), inner, max_size=4)
                | st.builds(_Inner, st.text(max_size=10), st.lists(st.integers(), max_size=3))
                | st.builds(_Outer, st.text(max_size=10), st.builds(_Inner, st.text(max_size=5)),
                            st.dictionaries(st.text(max_size=3), st.builds(_Inner, st.text(max_size=5)), max_size=2),
                            st.tuples(st.text(max_size=5), st.binary(max_size=5)), nothing=st.none()))

    @settings(max_examples=150, deadline=None)
    @given(st.recursive(leaves, containers, max_leaves=25))
    def check(value: object) -> None:
        assert held_bytes(value) == _held_the_long_way(value)

    check()


def test_a_diagnosis_is_charged_its_findings_once_whether_or_not_its_verdicts_were_read():
    """A diagnosis keeps its findings grouped by mode once an output reads them (``verdicts``):
    that cache holds the same findings, so the remembered run is charged as much before as after."""
    from mast_otel.processors.model import Diagnosis, Finding

    findings = [Finding("FM-1.3", 0.9, "repeated " + "x" * 2000, ("a" * 16, "b" * 16), detector="repetition"),
                Finding("FM-2.6", 0.85, "mismatch", ("c" * 16,), detector="mismatch", live=True)]
    diagnosis = Diagnosis("ab" * 16, findings, False, agent="agent")
    before = held_bytes(diagnosis)
    assert before >= 2000  # the findings are counted
    assert set(diagnosis.verdicts) == {"FM-1.3", "FM-2.6"}
    assert held_bytes(diagnosis) == before


def test_a_long_span_is_charged_each_of_its_strings_as_python_holds_it():
    """Property: a span received in up to 4 KiB is charged that; past 4 KiB of text, what
    ``sys.getsizeof`` gives for each of its non-empty strings (a wide character costs two or four
    bytes), plus its containers, or its received size if that is larger."""
    from hypothesis import example, given, settings
    from hypothesis import strategies as st

    from mast_otel.processors.service.pipeline.assembler import _CONTAINERS, _TEXTS

    piece = st.sampled_from(["a", "é", "\u4e2d", "\U0001F600", ""])
    text = st.tuples(piece, st.integers(0, 3000)).map(lambda p: (p[0] or "x") * p[1] + "t") | st.none() | st.just("")

    @settings(max_examples=120, deadline=None)
    @given(text, text, text, text, st.just(0) | st.integers(0, 20_000),
           st.lists(st.none() | st.text(max_size=20), max_size=4).map(tuple))
    @example("a" * 3000, "b" * 2000, None, "", 0, ("stop", None))  # ASCII only, size unknown
    @example("a" * 3000, "\u4e2d" * 2000, "", None, 5000, ())  # a wide string
    def check(input_text, output_text, tool_args, tool_result, received, finish_reasons):
        span = _span("01" * 8, input_text=input_text, output_text=output_text, tool_args=tool_args,
                     tool_result=tool_result, finish_reasons=finish_reasons, wire_bytes=received)
        texts = [t for t in _TEXTS(span) if t]
        held = sum(map(len, texts))
        if held > 4096:
            held = sum(map(sys.getsizeof, texts))
        held += sum(_held_the_long_way(c) for c in _CONTAINERS(span))
        expected = received if 0 < received <= 4096 else max(held, received)
        assert span_bytes(span, overhead=0) == expected

    check()
