"""The write-ahead log's CRC-32 is the same with ISA-L and with zlib, so a log written by an
install with one reads with an install with the other (the on-disk format does not depend on
which is present)."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.processors.service.wal import records
from mast_otel.processors.service.wal.records import MAGIC, PROTOBUF, encode_head, scan

isal_zlib = pytest.importorskip("isal.isal_zlib")


def test_the_log_uses_isal_where_installed():
    assert records.crc32 is isal_zlib.crc32


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=70_000), st.binary(max_size=64), st.integers(0, 70_000), st.integers(0, 70_000))
def test_isal_and_zlib_give_the_same_crc(payload: bytes, head: bytes, start: int, end: int):
    assert isal_zlib.crc32(payload, isal_zlib.crc32(head)) == zlib.crc32(payload, zlib.crc32(head))
    view = memoryview(payload)[start:end]  # how the reader checks a record inside a segment
    assert isal_zlib.crc32(view) == zlib.crc32(view)


@pytest.mark.parametrize("writer, reader", [(zlib.crc32, None), (None, zlib.crc32)])
def test_a_log_written_with_one_reads_with_the_other(monkeypatch, writer, reader):
    payloads = [b"", b"a", bytes(range(256)) * 600, b"\x00" * 131_072]
    if writer is not None:
        monkeypatch.setattr(records, "crc32", writer)
    data = MAGIC + b"".join(encode_head(PROTOBUF, i + 1, 2.5, p) + p for i, p in enumerate(payloads))
    monkeypatch.setattr(records, "crc32", reader or isal_zlib.crc32)
    read = scan(data)
    assert [(r.position, data[r.offset:r.offset + r.size]) for r in read.records] == list(enumerate(payloads, 1))
    assert not read.torn and not read.skipped
