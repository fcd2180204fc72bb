"""The write-ahead log of accepted spans: append-only segments, group commit, compaction.

Receivers acknowledge a request only once its body is in the log (and, with
``fsync: always``, on disk: concurrent requests wait for one shared ``fsync``). The ingest
stage appends under its own lock, so log positions follow the order spans reach the
assembler; it then tells the log which runs each record holds (``hold``) and, once runs are
diagnosed and handed to the exporters, that they are settled (``settle``, with the last
position their diagnosis included). A segment is deleted when every run it holds is settled
and the settled records it keeps are no longer needed, so the log stays as large as the runs
in flight. On start, ``recovered()`` yields what a restart must replay.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Literal, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mast_otel.processors.config import WALConfig
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.wal.records import MAGIC, SETTLED, decode_settled, encode_head, encode_settled, scan
from mast_otel.processors.usage import UsageError

log = logging.getLogger(__name__)

Writer = Callable[[int, Sequence[bytes]], int]
WRITEV: Writer = os.writev  # the default writer; tests swap in one that fails like a full disk
SUFFIX = ".wal"
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


class WALError(Exception):
    """The log could not take a record; the request must be refused so the exporter retries."""

    def __init__(self, reason: Literal["no_space", "io_error", "log_full"], message: str) -> None:
        super().__init__(message)
        self.reason = reason


class WALInUse(UsageError):
    """Another process holds the log's folder: two processors on one log would corrupt each other."""


class WALMetrics:
    """The log's own metrics, on the processor's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.bytes = Gauge("mast_wal_bytes", "Bytes in the write-ahead log's segment files.", registry=r)
        self.segments = Gauge("mast_wal_segments", "Segment files of the write-ahead log.", registry=r)
        self.appended_bytes_total = Counter("mast_wal_appended_bytes_total", "Bytes appended to the write-ahead log.", registry=r)
        self.append_errors_total = Counter(
            "mast_wal_append_errors_total",
            "Requests the write-ahead log could not take (and were refused with 503/UNAVAILABLE), by reason.",
            ("reason",), registry=r)
        self.fsync_seconds = Histogram(
            "mast_wal_fsync_seconds", "Time of one fsync of the write-ahead log (one per group of requests).", registry=r,
            buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0))
        self.replayed_spans_total = Counter(
            "mast_wal_replayed_spans_total", "Spans read back from the write-ahead log at start into the runs in flight.", registry=r)
        self.corrupt_tails_total = Counter(
            "mast_wal_corrupt_tails_total", "Segments whose torn or corrupt tail was cut off at start.", registry=r)
        self.truncated_bytes_total = Counter(
            "mast_wal_truncated_bytes_total", "Bytes cut off torn or corrupt segment tails at start.", registry=r)


@dataclass(slots=True)
class Segment:
    index: int
    path: Path
    size: int
    fd: int = -1  # open only while it is the active segment
    live: set[str] = field(default_factory=set)  # runs with spans here that are not settled yet
    needs: set[int] = field(default_factory=set)  # older segments whose runs this one's settled records describe


@dataclass(frozen=True, slots=True)
class Appended:
    position: int
    segment: int


@dataclass(frozen=True, slots=True)
class Recovered:
    """One request record to replay, with the runs already settled through a later position."""

    segment: int
    position: int
    kind: int
    received_at: float
    payload: bytes
    settled: dict[str, int]  # trace id -> last position its settled diagnosis included


class SpanLog(Lifecycle):
    """The write-ahead log (one directory of segment files); see the module docstring."""

    name = "wal"

    def __init__(self, config: WALConfig, directory: Path, registry: CollectorRegistry, *,
                 writer: Writer | None = None, metrics: WALMetrics | None = None) -> None:
        self.config = config
        self.directory = Path(directory)
        self.metrics = metrics or WALMetrics(registry)
        self._write = writer or WRITEV
        self._cond = threading.Condition(threading.Lock())  # guards everything below
        self._sync_lock = threading.Lock()  # held while an fsync runs (a roll waits for it)
        self._segments: dict[int, Segment] = {}
        self._active: Segment | None = None
        self._holds: dict[str, dict[int, int]] = {}  # trace id -> segment -> last position held there
        self._position = 0  # last position appended
        self._synced = 0  # last position known to be on disk
        self._failed: list[tuple[int, int]] = []  # (after, through) ranges an fsync failed for
        self._async_waiters: list[tuple[int, asyncio.AbstractEventLoop, asyncio.Future]] = []
        self._total = 0
        self._stopping = False
        self._flusher: threading.Thread | None = None
        self._recovery: list[tuple[Segment, list]] = []
        self._settled: dict[str, int] = {}
        self._dir_fd = -1  # the directory, locked while this log is open and synced when a segment is created

    # --- lifecycle -------------------------------------------------------------------------------
    def _start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            fcntl.flock(self._dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._dir_fd)
            self._dir_fd = -1
            raise WALInUse(f"the write-ahead log {self.directory} is in use by another process; "
                           "give each processor its own wal.directory (its own volume)") from None
        self._read_existing()
        self._roll()
        if self.config.fsync != "never":
            self._flusher = threading.Thread(target=self._flush_loop, name="mast-otel-wal-fsync", daemon=True)
            self._flusher.start()

    def _shutdown(self, timeout: float) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._flusher is not None:
            self._flusher.join(timeout)
            self._flusher = None
        with self._cond, self._sync_lock:
            active = self._active
            if active is not None and active.fd >= 0:
                try:
                    os.fsync(active.fd)
                    self._synced = self._position
                except OSError as exc:
                    log.error("the write-ahead log could not be synced at shutdown (%s)", exc)
                os.close(active.fd)
                active.fd = -1
            self._delete_settled()
            self._resolve_async()
            self._cond.notify_all()
            if self._dir_fd >= 0:
                os.close(self._dir_fd)  # releases the lock
                self._dir_fd = -1

    def _read_existing(self) -> None:
        """Check every segment left by the last process (cutting torn tails) and collect its settled runs."""
        paths = sorted(self.directory.glob(f"*{SUFFIX}"), key=lambda p: p.name)
        older: set[int] = set()
        for path in paths:
            try:
                index = int(path.stem)
            except ValueError:
                continue
            data = path.read_bytes()
            found = scan(data)
            if found.torn:
                cut = found.file_bytes - found.valid_bytes
                self.metrics.corrupt_tails_total.inc()
                self.metrics.truncated_bytes_total.inc(cut)
                log.warning("write-ahead log segment %s: cut a torn or corrupt tail of %d bytes (%d valid records kept)",
                            path.name, cut, len(found.records))
                with open(path, "r+b") as f:
                    if found.valid_bytes < len(MAGIC):
                        f.truncate(0)
                        f.write(MAGIC)
                    else:
                        f.truncate(found.valid_bytes)
                    f.flush()
                    os.fsync(f.fileno())
            size = max(found.valid_bytes, len(MAGIC))
            segment = Segment(index, path, size, needs=set(older))
            older.add(index)
            self._segments[index] = segment
            self._total += size
            requests = []
            for record in found.records:
                self._position = max(self._position, record.position)
                if record.kind == SETTLED:
                    through, ids = decode_settled(data[record.offset:record.offset + record.size])
                    for trace_id in ids:
                        self._settled[trace_id] = max(self._settled.get(trace_id, 0), through)
                else:
                    requests.append(record)
            self._recovery.append((segment, requests))
        self._synced = self._position
        self._publish()

    def recovered(self) -> Iterator[Recovered]:
        """The request records left by the last process, oldest first (once, after ``start``)."""
        recovery, self._recovery = self._recovery, []
        settled, self._settled = self._settled, {}
        for segment, records in recovery:
            if not records:
                continue
            data = segment.path.read_bytes()
            for record in records:
                yield Recovered(segment.index, record.position, record.kind, record.received_at,
                                data[record.offset:record.offset + record.size], settled)
        with self._cond:
            self._delete_settled()

    # --- appending (under the ingest stage's lock) -------------------------------------------------
    def full(self) -> bool:
        return self._total >= self.config.max_bytes

    def pinning(self) -> list[str]:
        """Past ``evict_at`` of ``max_bytes``: the runs not settled yet that keep the oldest
        segment from being deleted (the ingest stage diagnoses them early). Otherwise none."""
        with self._cond:
            if self._total < self.config.evict_at * self.config.max_bytes:
                return []
            for index in sorted(self._segments):
                seg = self._segments[index]
                if seg is not self._active and seg.live:
                    return sorted(seg.live)
            return []

    @property
    def position(self) -> int:
        """The last position appended: every record up to it has reached the assembler."""
        return self._position

    def append(self, kind: int, payload: bytes, received_at: float) -> Appended:
        """Write one record; raises :class:`WALError` (nothing written) when it cannot."""
        with self._cond:
            if self._stopping or self._active is None:
                raise WALError("io_error", "the write-ahead log is closed")
            position = self._position + 1
            head = encode_head(kind, position, received_at, payload)
            size = len(head) + len(payload)
            if self._total + size > self.config.max_bytes:
                self.metrics.append_errors_total.labels("log_full").inc()
                raise WALError("log_full", f"the write-ahead log holds its limit of {self.config.max_bytes} bytes of runs in flight")
            if self._active.size >= self.config.segment_bytes:
                try:
                    self._roll()
                except WALError as exc:
                    self.metrics.append_errors_total.labels(exc.reason).inc()
                    raise
            active = self._active
            try:
                self._write_all(active, (head, payload), size)
            except OSError as exc:
                reason = "no_space" if exc.errno in _NO_SPACE else "io_error"
                self.metrics.append_errors_total.labels(reason).inc()
                raise WALError(reason, f"the write-ahead log could not be written ({exc.strerror or exc})") from None
            self._position = position
            active.size += size
            self._total += size
            self.metrics.appended_bytes_total.inc(size)
            self.metrics.bytes.set(self._total)
            if self.config.fsync == "always":
                self._cond.notify_all()
            return Appended(position, active.index)

    def _write_all(self, segment: Segment, parts: tuple[bytes, bytes], size: int) -> None:
        """Write a whole record or, on failure, nothing: a partial record is cut off again."""
        start = segment.size
        try:
            written = self._write(segment.fd, parts)
            while written < size:  # a short write: the rest, from where it stopped
                written += self._write(segment.fd, (b"".join(parts)[written:],))
        except OSError:
            try:
                os.ftruncate(segment.fd, start)
                os.lseek(segment.fd, start, os.SEEK_SET)
            except OSError:
                self._roll_quietly()
            raise

    def _roll_quietly(self) -> None:
        try:
            self._roll()
        except WALError:
            pass

    def _roll(self) -> None:
        """Start a new segment (the old one is synced and closed first)."""
        index = max(self._segments, default=0) + 1
        path = self.directory / f"{index:012d}{SUFFIX}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError as exc:
            raise WALError("no_space" if exc.errno in _NO_SPACE else "io_error", f"cannot create {path}: {exc}") from None
        try:
            self._write(fd, (MAGIC,))
        except OSError as exc:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise WALError("no_space" if exc.errno in _NO_SPACE else "io_error", f"cannot start {path}: {exc}") from None
        try:
            os.fsync(self._dir_fd)  # the new file's name survives a power loss too
        except OSError as exc:
            log.warning("could not sync the write-ahead log directory (%s)", exc)
        old = self._active
        if old is not None and old.fd >= 0:
            with self._sync_lock:
                try:
                    if self.config.fsync != "never":
                        os.fsync(old.fd)
                except OSError as exc:
                    log.error("fsync of write-ahead log segment %s failed (%s)", old.path.name, exc)
                    self._failed.append((self._synced, self._position))
                os.close(old.fd)
                old.fd = -1
        self._active = Segment(index, path, len(MAGIC), fd)
        self._segments[index] = self._active
        self._total += len(MAGIC)
        self._publish()

    # --- which runs each segment holds -------------------------------------------------------------
    def hold(self, segment: int, position: int, trace_ids: Sequence[str]) -> None:
        """The runs ``trace_ids`` have spans in ``segment`` up to ``position`` and are not settled."""
        with self._cond:
            seg = self._segments.get(segment)
            if seg is None:
                return
            for trace_id in trace_ids:
                seg.live.add(trace_id)
                held = self._holds.get(trace_id)
                if held is None:
                    self._holds[trace_id] = {segment: position}
                else:
                    held[segment] = position

    def settle(self, trace_ids: Sequence[str], through: int) -> None:
        """These runs were diagnosed (with every span up to ``through``) and handed to the
        exporters: record it, release the segments only they held, delete what is free."""
        if not trace_ids:
            return
        with self._cond:
            released: set[int] = set()
            for trace_id in trace_ids:
                held = self._holds.get(trace_id)
                if not held:
                    continue
                for segment, last in list(held.items()):
                    if last > through:
                        continue  # spans that arrived after this diagnosis: the run is live again
                    del held[segment]
                    released.add(segment)
                    seg = self._segments.get(segment)
                    if seg is not None:
                        seg.live.discard(trace_id)
                if not held:
                    del self._holds[trace_id]
            if released and self._active is not None and not self._stopping:
                payload = encode_settled(through, list(trace_ids))
                head = encode_head(SETTLED, self._position + 1, time.time(), payload)
                try:
                    self._write_all(self._active, (head, payload), len(head) + len(payload))
                except OSError:
                    pass  # without the record a restart replays these runs; the store's record of them stops a second count
                else:
                    self._position += 1
                    self._active.size += len(head) + len(payload)
                    self._total += len(head) + len(payload)
                    self._active.needs |= released - {self._active.index}
            self._delete_settled()

    def _delete_settled(self) -> None:
        changed = True
        while changed:
            changed = False
            for seg in list(self._segments.values()):
                if seg is self._active or seg.live or seg.needs & self._segments.keys():
                    continue
                try:
                    seg.path.unlink(missing_ok=True)
                except OSError as exc:
                    log.error("cannot delete write-ahead log segment %s (%s)", seg.path, exc)
                    continue
                del self._segments[seg.index]
                self._total -= seg.size
                changed = True
        self._publish()

    def _publish(self) -> None:
        self.metrics.bytes.set(self._total)
        self.metrics.segments.set(len(self._segments))

    @property
    def total_bytes(self) -> int:
        return self._total

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    # --- durability: group commit -----------------------------------------------------------------
    def _outcome(self, position: int) -> WALError | None | bool:
        """``None`` durable, a ``WALError`` when its fsync failed, ``False`` not yet."""
        for after, through in self._failed:
            if after < position <= through:
                return WALError("io_error", "the write-ahead log could not be synced to disk")
        if self._synced >= position or self.config.fsync != "always":
            return None
        if self._stopping:
            return WALError("io_error", "the write-ahead log closed before the request was synced")
        return False

    def wait(self, position: int) -> WALError | None:
        """Block until ``position`` is durable per the fsync policy (gRPC worker threads)."""
        with self._cond:
            while (outcome := self._outcome(position)) is False:
                self._cond.wait()
            return outcome

    async def wait_async(self, position: int) -> WALError | None:
        """The same for the HTTP receiver's event loop: concurrent requests share one fsync."""
        with self._cond:
            outcome = self._outcome(position)
            if outcome is not False:
                return outcome
            loop = asyncio.get_running_loop()
            future = loop.create_future()
            self._async_waiters.append((position, loop, future))
            self._cond.notify_all()
        return await future

    def _flush_loop(self) -> None:
        interval = self.config.fsync_interval_seconds if self.config.fsync == "interval" else None
        while True:
            with self._cond:
                while not self._stopping and self._position <= self._synced:
                    self._cond.wait(interval)
                if self._stopping:
                    return
                target, active = self._position, self._active
            with self._sync_lock:
                error: OSError | None = None
                if active is not None and active.fd >= 0:  # else a roll synced and closed it
                    started = time.perf_counter()
                    try:
                        os.fsync(active.fd)
                    except OSError as exc:
                        error = exc
                    self.metrics.fsync_seconds.observe(time.perf_counter() - started)
            with self._cond:
                if error is not None:
                    log.error("fsync of the write-ahead log failed (%s); the requests waiting for it are refused", error)
                    self._failed = [*self._failed[-7:], (self._synced, target)]
                    self._synced = target  # not durable: the waiters in the failed range are refused
                    self._roll_quietly()
                else:
                    self._synced = max(self._synced, target)
                self._resolve_async()
                self._cond.notify_all()
            if interval is not None:
                with self._cond:
                    if not self._stopping:
                        self._cond.wait(interval)

    def _resolve_async(self) -> None:
        waiting = []
        for position, loop, future in self._async_waiters:
            outcome = self._outcome(position)
            if outcome is False:
                waiting.append((position, loop, future))
            else:
                loop.call_soon_threadsafe(_settle_future, future, outcome)
        self._async_waiters = waiting


def _settle_future(future: asyncio.Future, outcome: WALError | None) -> None:
    if not future.done():
        future.set_result(outcome)
