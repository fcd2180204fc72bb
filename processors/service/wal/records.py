"""The write-ahead log's on-disk format: pure encoding and decoding, no file handling.

A segment file is a magic header followed by records::

    length  u32   bytes after this 9-byte prefix (kind, position, received_at, payload)
    crc32   u32   of those bytes
    kind    u8    1 OTLP protobuf request, 2 OTLP JSON request, 3 settled runs
    position u64  the record's log position (grows by one per record, across segments)
    received_at f64  wall-clock seconds when the request was accepted
    payload

A request record's payload is the request body exactly as received (after gzip), so the hot
path writes bytes it already holds. A settled record says which runs were diagnosed and
handed to the exporters, and up to which log position their spans were included:
``u64 through`` then 16-byte trace ids. Reading stops at the first record that is short,
oversized, of an unknown kind or fails its checksum: a torn or corrupt tail.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Iterator

MAGIC = b"MASTWAL1"
PREFIX = struct.Struct("<II")  # length, crc32
HEAD = struct.Struct("<BQd")  # kind, position, received_at
PROTOBUF, JSON, SETTLED = 1, 2, 3
KINDS = (PROTOBUF, JSON, SETTLED)
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
    """A segment read front to back: its valid records and where its valid part ends."""

    records: list[RecordHeader]
    valid_bytes: int
    file_bytes: int

    @property
    def torn(self) -> bool:
        return self.valid_bytes < self.file_bytes


def encode_head(kind: int, position: int, received_at: float, payload: bytes) -> bytes:
    """The prefix and head of a record; the payload follows it unchanged (written with writev)."""
    head = HEAD.pack(kind, position, received_at)
    crc = zlib.crc32(payload, zlib.crc32(head))
    return PREFIX.pack(len(head) + len(payload), crc) + head


def encode_settled(through: int, trace_ids: list[str]) -> bytes:
    """A settled record's payload."""
    return _THROUGH.pack(through) + b"".join(bytes.fromhex(t) for t in trace_ids)


def decode_settled(payload: bytes) -> tuple[int, list[str]]:
    (through,) = _THROUGH.unpack_from(payload)
    ids = payload[_THROUGH.size:]
    return through, [ids[i:i + 16].hex() for i in range(0, len(ids) - 15, 16)]


def scan(data: bytes) -> Scan:
    """Every valid record of a segment's bytes, stopping at a torn or corrupt tail."""
    if not data.startswith(MAGIC):
        return Scan([], 0, len(data))
    records: list[RecordHeader] = []
    pos, end = len(MAGIC), len(data)
    while pos + PREFIX.size <= end:
        length, crc = PREFIX.unpack_from(data, pos)
        body = pos + PREFIX.size
        if length < HEAD.size or length > MAX_RECORD_BYTES or body + length > end:
            break
        if zlib.crc32(memoryview(data)[body:body + length]) != crc:
            break
        kind, position, received_at = HEAD.unpack_from(data, body)
        if kind not in KINDS:
            break
        records.append(RecordHeader(kind, position, received_at, body + HEAD.size, length - HEAD.size))
        pos = body + length
    return Scan(records, pos, end)


def payloads(data: bytes, records: list[RecordHeader]) -> Iterator[tuple[RecordHeader, bytes]]:
    for record in records:
        yield record, data[record.offset:record.offset + record.size]
