"""The write-ahead log's CRC-32 is zlib's, whatever else is installed: ISA-L's (``isal``) gives the
same value faster per call, but the server's work around it cost more CPU than the call saved
(records.py says where that was measured). Logs written by a build that used ISA-L hold the same
values, so they read as before."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.processors.service.wal import records
from mast_otel.processors.service.wal.records import MAGIC, PROTOBUF, encode_head, scan


def test_the_log_uses_zlibs_crc32_even_where_isal_is_installed():
    assert records.crc32 is zlib.crc32


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=70_000), st.binary(max_size=64), st.integers(0, 70_000), st.integers(0, 70_000))
def test_isal_and_zlib_give_the_same_crc(payload: bytes, head: bytes, start: int, end: int):
    isal_zlib = pytest.importorskip("isal.isal_zlib")
    assert isal_zlib.crc32(payload, isal_zlib.crc32(head)) == zlib.crc32(payload, zlib.crc32(head))
    view = memoryview(payload)[start:end]  # how the reader checks a record inside a segment
    assert isal_zlib.crc32(view) == zlib.crc32(view)


def test_a_log_written_with_isal_reads(monkeypatch):
    isal_zlib = pytest.importorskip("isal.isal_zlib")
    payloads = [b"", b"a", bytes(range(256)) * 600, b"\x00" * 131_072]
    monkeypatch.setattr(records, "crc32", isal_zlib.crc32)
    data = MAGIC + b"".join(encode_head(PROTOBUF, i + 1, 2.5, p) + p for i, p in enumerate(payloads))
    monkeypatch.undo()
    read = scan(data)
    assert [(r.position, data[r.offset:r.offset + r.size]) for r in read.records] == list(enumerate(payloads, 1))
    assert not read.torn and not read.skipped
