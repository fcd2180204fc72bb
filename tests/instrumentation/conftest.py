"""Fixtures for the instrumentation tests: spans read back through the SDK's in-memory exporter."""

from __future__ import annotations

import time

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel.instrumentation import configure


class Spans:
    """The finished spans of one test, with lookups by name."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"expected one span {name!r}, got {[s.name for s in self.all]}"
        return found[0]

    @staticmethod
    def parent_of(span: ReadableSpan) -> int | None:
        return span.parent.span_id if span.parent else None

    def wait_for(self, count: int, timeout: float = 5.0) -> list[ReadableSpan]:
        """Spans recorded from background threads (litellm reports successes there) arrive late."""
        deadline = time.monotonic() + timeout
        while len(self.all) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.all


@pytest.fixture
def spans():
    recorder = Spans()
    configure(tracer_provider=recorder.provider, capture_content=False)
    yield recorder
    configure(tracer_provider=None, capture_content=None)


@pytest.fixture
def capture(spans):
    configure(capture_content=True)
    return spans
