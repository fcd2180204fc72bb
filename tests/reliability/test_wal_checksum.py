"""The write-ahead log's CRC-32 is zlib's, whatever else is installed: ISA-L's (``isal``) gives the
same value faster per call, but the server's work around it cost more CPU than the call saved
(records.py says where that was measured). A record's checksum is the standard CRC-32 of its head
and payload, so a log written by any build (one that used ISA-L included) reads as before."""

from __future__ import annotations

import zlib

from mast_otel.processors.service.wal import records
from mast_otel.processors.service.wal.records import MAGIC, PROTOBUF, encode_head, scan


def test_the_log_uses_zlibs_crc32_even_where_isal_is_installed():
    assert records.crc32 is zlib.crc32


def test_the_checksum_is_the_standard_crc32():
    """The check value every CRC-32 (ISO-HDLC) implementation gives for ``123456789``."""
    assert records.crc32(b"123456789") == 0xCBF43926


def test_a_log_written_with_a_checksum_computed_elsewhere_reads(monkeypatch):
    """Records whose checksums come from another standard CRC-32 (here a table-driven one written
    in the test, as another build's library would compute them) read as written."""
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table.append(c)

    def other_crc32(data: bytes | memoryview, value: int = 0) -> int:
        c = value ^ 0xFFFFFFFF
        for byte in bytes(data):
            c = table[(c ^ byte) & 0xFF] ^ (c >> 8)
        return c ^ 0xFFFFFFFF

    payloads = [b"", b"a", bytes(range(256)) * 40, b"\x00" * 4096]
    monkeypatch.setattr(records, "crc32", other_crc32)
    data = MAGIC + b"".join(encode_head(PROTOBUF, i + 1, 2.5, p) + p for i, p in enumerate(payloads))
    monkeypatch.undo()
    read = scan(data)
    assert [(r.position, data[r.offset:r.offset + r.size]) for r in read.records] == list(enumerate(payloads, 1))
    assert not read.torn and not read.skipped
