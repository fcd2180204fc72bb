"""The write-ahead log's on-disk format: pure encoding and decoding, no file handling.

A segment file is a magic header (``MASTWAL2``) followed by records::

    sync    4 bytes  a fixed marker, where a reader looks for the next record after a bad one
    length  u32      bytes after the 12-byte prefix (kind, position, received_at, payload)
    crc32   u32      of those bytes
    kind    u8       1 OTLP protobuf request, 2 OTLP JSON request, 3 settled runs,
                     4 OTLP protobuf logs request, 5 OTLP JSON logs request
    position u64     the record's log position (grows by one per record, across segments)
    received_at f64  wall-clock seconds when the request was accepted
    payload

A request record's payload is the request body exactly as received (after gzip), so the hot
path writes bytes it already holds. A settled record says which runs were diagnosed and
handed to the exporters, and up to which log position their spans were included:
``u64 through`` then 16-byte trace ids.

A record that is short, oversized, of an unknown kind or fails its checksum is skipped: the
reader resumes at the next sync marker that starts a valid record with a later position, so
one damaged record costs that record only. Bytes after the last valid record are a torn or
corrupt tail. Segments of the first format (``MASTWAL1``, no sync marker) are still read, up
to their first bad record.

The checksum is the standard CRC-32, zlib's. Not ISA-L's (``isal``), though it gives the same value
some 25 times faster per call: on the development VM the server's own Python work around it
(decoding above all) cost 11-15% more CPU once ISA-L's routine ran, on the synthetic workload
(docs/processor.md, "Performance"); zlib's costs about 1% of a request's CPU.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator
from zlib import crc32

MAGIC = b"MASTWAL2"
MAGIC_V1 = b"MASTWAL1"
SYNC = b"\xc3MW\x9e"
PREFIX = struct.Struct("<4sII")  # sync, length, crc32
PREFIX_V1 = struct.Struct("<II")  # length, crc32
HEAD = struct.Struct("<BQd")  # kind, position, received_at
PROTOBUF, JSON, SETTLED, LOGS_PROTOBUF, LOGS_JSON = 1, 2, 3, 4, 5
KINDS = (PROTOBUF, JSON, SETTLED, LOGS_PROTOBUF, LOGS_JSON)
LOG_KINDS = (LOGS_PROTOBUF, LOGS_JSON)
MAX_RECORD_BYTES = 1 << 30  # a length above this is corruption, not a request
_THROUGH = struct.Struct("<Q")


@dataclass(frozen=True, slots=True)
class RecordHeader:
    """Where a valid record sits in its segment, without its payload."""

    kind: int
    position: int
    received_at: float
    offset: int  # of the payload in the segment file
    size: int  # payload bytes


@dataclass(frozen=True, slots=True)
class Scan:
    """A segment read front to back: its valid records, the damaged stretches skipped between
    them (start, end), and where its valid part ends."""

    records: list[RecordHeader]
    valid_bytes: int
    file_bytes: int
    skipped: list[tuple[int, int]]

    @property
    def torn(self) -> bool:
        return self.valid_bytes < self.file_bytes


def encode_head(kind: int, position: int, received_at: float, payload: bytes) -> bytes:
    """The prefix and head of a record; the payload follows it unchanged (written with writev)."""
    head = HEAD.pack(kind, position, received_at)
    crc = crc32(payload, crc32(head))
    return PREFIX.pack(SYNC, len(head) + len(payload), crc) + head


def encode_settled(through: int, trace_ids: list[str]) -> bytes:
    """A settled record's payload."""
    return _THROUGH.pack(through) + b"".join(bytes.fromhex(t) for t in trace_ids)


def decode_settled(payload: bytes) -> tuple[int, list[str]]:
    (through,) = _THROUGH.unpack_from(payload)
    ids = payload[_THROUGH.size:]
    return through, [ids[i:i + 16].hex() for i in range(0, len(ids) - 15, 16)]


def _record_at(data: bytes, pos: int, prefix: struct.Struct, after: int) -> RecordHeader | None:
    """The valid record starting at ``pos`` (position above ``after``), or ``None``."""
    end = len(data)
    if pos + prefix.size > end:
        return None
    *sync, length, crc = prefix.unpack_from(data, pos)
    body = pos + prefix.size
    if (sync and sync[0] != SYNC) or length < HEAD.size or length > MAX_RECORD_BYTES or body + length > end:
        return None
    kind, position, received_at = HEAD.unpack_from(data, body)
    if kind not in KINDS or position <= after or crc32(memoryview(data)[body:body + length]) != crc:
        return None
    return RecordHeader(kind, position, received_at, body + HEAD.size, length - HEAD.size)


def scan(data: bytes) -> Scan:
    """Every valid record of a segment's bytes, skipping damaged ones (see the module docstring)."""
    if data.startswith(MAGIC_V1):
        return _scan_v1(data)
    if not data.startswith(MAGIC):
        return Scan([], 0, len(data), [])
    records: list[RecordHeader] = []
    skipped: list[tuple[int, int]] = []
    pos, valid, last = len(MAGIC), len(MAGIC), 0
    while pos < len(data):
        record = _record_at(data, pos, PREFIX, last)
        if record is None:  # resynchronise: the next marker that starts a valid record
            bad, pos = pos, data.find(SYNC, pos + 1)
            while pos >= 0 and (record := _record_at(data, pos, PREFIX, last)) is None:
                pos = data.find(SYNC, pos + 1)
            if record is None:
                break
            skipped.append((bad, pos))
        records.append(record)
        last = record.position
        pos = valid = record.offset + record.size
    return Scan(records, valid, len(data), skipped)


def _scan_v1(data: bytes) -> Scan:
    """A first-format segment: no sync marker, so reading stops at its first bad record."""
    records: list[RecordHeader] = []
    pos = len(MAGIC_V1)
    while (record := _record_at(data, pos, PREFIX_V1, 0)) is not None:
        records.append(record)
        pos = record.offset + record.size
    return Scan(records, pos, len(data), [])


def payloads(data: bytes, records: list[RecordHeader]) -> Iterator[tuple[RecordHeader, bytes]]:
    for record in records:
        yield record, data[record.offset:record.offset + record.size]
