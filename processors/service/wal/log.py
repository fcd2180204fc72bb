"""The write-ahead log of accepted spans: append-only segments, group commit, compaction.

Receivers acknowledge a request only once its body is in the log (and, with
``fsync: always``, on disk: concurrent requests wait for one shared ``fsync``). The ingest
stage appends under its own lock, so log positions follow the order spans reach the
assembler; it then tells the log which runs each record holds (``hold``) and, once runs are
diagnosed and handed to the exporters, that they are settled (``settle``, with the last
position their diagnosis included), and once the assembler no longer retains them for late
spans, that they are released (``release``). A segment is deleted when every run it holds is
settled and released and the settled records it keeps are no longer needed, so the log stays
as large as the runs in flight and the diagnosed runs retained for late spans. On start,
``recovered()`` yields what a restart must replay.

The log watches its own files: a segment unlinked, truncated or replaced, the folder gone or
an I/O error puts it at fault (``fault``): every append is refused (503) and readiness turns
false until ``check()`` repairs it, re-creating the folder and rewriting every segment still
needed from the descriptors it keeps open, so nothing acknowledged before the fault is lost.
A write that fails for lack of space or permission blocks it instead (``blocked``): appends
are still tried, so refusals end with the first write that fits, and readiness is false until
``check`` can write and remove a probe file; each block and its end are logged once.
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
from mast_otel.processors.service.wal.records import MAGIC, MAGIC_V1, SETTLED, decode_settled, encode_head, encode_settled, scan
from mast_otel.processors.usage import UsageError

log = logging.getLogger(__name__)

Writer = Callable[[int, Sequence[bytes]], int]
WRITEV: Writer = os.writev  # the default writer; tests swap in one that fails like a full disk
# A segment only grows by appends, so syncing its data is enough: fdatasync writes the data and the
# metadata needed to read it back, the file's size included (POSIX; Linux's fdatasync(2) names the
# size as what it does flush), and leaves out only the timestamps, which no restart reads. The
# folder (new segments' names), a repaired segment and a cut tail still get a full fsync.
SYNC_DATA: Callable[[int], None] = getattr(os, "fdatasync", os.fsync)
SUFFIX = ".wal"
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_NO_PERMISSION = {errno.EACCES, errno.EPERM, errno.EROFS}
PROBE = "write-probe"  # written and removed in the folder to learn whether the log can write again
PROBE_BYTES = 64 * 1024
QUIET_SECONDS = 30.0  # a write failure back this soon after it cleared logs no new pair of lines


class WALError(Exception):
    """The log could not take a record; the request must be refused so the exporter retries."""

    def __init__(self, reason: Literal["no_space", "io_error", "log_full"], message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code  # the errno behind it, when there is one


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
        self.corrupt_records_total = Counter(
            "mast_wal_corrupt_records_total",
            "Damaged stretches skipped inside a segment at start (the valid records after them are kept).", registry=r)
        self.faults_total = Counter(
            "mast_wal_faults_total",
            "Times the log found its folder or active segment gone, replaced or failing (it refuses requests until repaired).",
            registry=r)


@dataclass(slots=True)
class Segment:
    index: int
    path: Path
    size: int
    fd: int = -1  # open while the segment exists: a repair rewrites it from here if its file goes away
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
        lock = threading.Lock()  # guards everything below
        self._cond = threading.Condition(lock)  # durability waiters (gRPC worker threads), on this lock
        self._wanted = threading.Condition(lock)  # the flusher, waiting for a record to sync
        self._syncing = False  # the flusher is syncing: it looks for new records when done, unwoken
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
        self._through: dict[str, int] = {}  # held run -> last position its settled diagnosis included
        self._released: set[str] = set()  # held runs the assembler no longer retains: settled positions may go
        self._next_index = 1
        self.fault: str | None = None  # why the log refuses appends until ``check`` repairs it
        # why the log cannot write (a full filesystem, a folder it may not write in): appends are
        # still tried, readiness is false until ``check`` writes and removes a probe file
        self.blocked: str | None = None
        self.blocked_kind: Literal["no_space", "no_permission"] | None = None
        self._said_blocked = False  # this block's ERROR line was logged (so its clearing is too)
        self._last_block_line = -QUIET_SECONDS

    # --- lifecycle -------------------------------------------------------------------------------
    def _start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._dir_fd = self._lock_directory()
        (self.directory / PROBE).unlink(missing_ok=True)  # left by a process killed while probing
        self._read_existing()
        try:
            self._roll()
        except WALError as exc:  # a full or read-only filesystem: start blocked, replay, free what settles
            if not self._block_on(exc.code, str(exc)):
                raise
        if self.config.fsync != "never":
            self._flusher = threading.Thread(target=self._flush_loop, name="mast-otel-wal-fsync", daemon=True)
            self._flusher.start()

    def _lock_directory(self) -> int:
        fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise WALInUse(f"the write-ahead log {self.directory} is in use by another process; "
                           "give each processor its own wal.directory (its own volume)") from None
        return fd

    def _shutdown(self, timeout: float) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            self._wanted.notify_all()
        if self._flusher is not None:
            self._flusher.join(timeout)
            self._flusher = None
        with self._cond, self._sync_lock:
            active = self._active
            if active is not None and active.fd >= 0:
                try:
                    SYNC_DATA(active.fd)
                    self._synced = self._position
                except OSError as exc:
                    log.error("the write-ahead log could not be synced at shutdown (%s)", exc)
            self._delete_settled()
            for seg in self._segments.values():
                if seg.fd >= 0:
                    os.close(seg.fd)
                    seg.fd = -1
            settled = self._take_settled()
            self._cond.notify_all()
            if self._dir_fd >= 0:
                os.close(self._dir_fd)  # releases the lock
                self._dir_fd = -1
        _hand_back(settled)

    def _read_existing(self) -> None:
        """Check every segment left by the last process and collect its settled runs. A damaged
        record is skipped (the valid ones after it are kept); only a torn tail after the last
        valid record is cut. Entries that are not segment files are left alone, with a warning."""
        paths: list[tuple[int, Path]] = []
        for path in self.directory.iterdir():
            if not path.name.endswith(SUFFIX):
                continue
            index = int(path.stem) if path.stem.isdigit() else None
            if index is not None:
                self._next_index = max(self._next_index, index + 1)  # never reuse a name, even a foreign one
            if index is None or path.is_symlink() or not path.is_file():
                log.warning("write-ahead log folder %s: ignored %s (not a segment file written by this log)",
                            self.directory, path.name)
                continue
            paths.append((index, path))
        older: set[int] = set()
        for index, path in sorted(paths):
            fd = os.open(path, os.O_RDWR)
            data = _read_all(fd)
            found = scan(data)
            if found.skipped:
                self.metrics.corrupt_records_total.inc(len(found.skipped))
                log.warning("write-ahead log segment %s: skipped %d damaged stretch(es) of %d bytes in all; "
                            "the %d valid records around them are kept", path.name, len(found.skipped),
                            sum(end - start for start, end in found.skipped), len(found.records))
            if found.torn:
                cut = found.file_bytes - found.valid_bytes
                self.metrics.corrupt_tails_total.inc()
                if data.startswith(MAGIC_V1):  # no sync marker to find records after it: keep the bytes
                    log.warning("write-ahead log segment %s (first format): %d bytes after a damaged record are not "
                                "read (%d valid records before it kept)", path.name, cut, len(found.records))
                else:
                    self.metrics.truncated_bytes_total.inc(cut)
                    log.warning("write-ahead log segment %s: cut a torn or corrupt tail of %d bytes (%d valid records kept)",
                                path.name, cut, len(found.records))
                    if found.valid_bytes < len(MAGIC):
                        os.ftruncate(fd, 0)
                        os.pwrite(fd, MAGIC, 0)
                    else:
                        os.ftruncate(fd, found.valid_bytes)
                    os.fsync(fd)
            size = max(found.valid_bytes, len(MAGIC)) if not data.startswith(MAGIC_V1) else len(data)
            segment = Segment(index, path, size, fd, needs=set(older))
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
            data = _read_all(segment.fd)
            for record in records:
                yield Recovered(segment.index, record.position, record.kind, record.received_at,
                                data[record.offset:record.offset + record.size], settled)
        with self._cond:  # the runs rebuilt as diagnosed: what their settled diagnosis included
            self._through = {t: p for t, p in settled.items() if t in self._holds}
            for trace_id in list(self._released):
                if trace_id in self._holds:
                    self._free(trace_id)
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
            if self._stopping or (self._active is None and self.blocked is None):
                raise WALError("io_error", "the write-ahead log is closed")
            if self._active is None:  # started blocked: no segment yet
                try:
                    self._roll()
                except WALError as exc:
                    self.metrics.append_errors_total.labels(exc.reason).inc()
                    raise
            if self.fault is None:
                self._watch_active()
            if self.fault is not None:
                self.metrics.append_errors_total.labels("io_error").inc()
                raise WALError("io_error", f"the write-ahead log is at fault: {self.fault}")
            position = self._position + 1
            head = encode_head(kind, position, received_at, payload)
            size = len(head) + len(payload)
            if self._total + size > self.config.max_bytes:
                self.metrics.append_errors_total.labels("log_full").inc()
                raise WALError("log_full", f"the write-ahead log holds its limit of {self.config.max_bytes} bytes of runs in flight")
            if self._active is not None and self._active.size >= self.config.segment_bytes:
                try:
                    self._roll()
                except WALError as exc:
                    self.metrics.append_errors_total.labels(exc.reason).inc()
                    if exc.code is not None:
                        self._block_on(exc.code, str(exc))
                    raise
            active = self._active
            if active is None:  # not reached: a segment was rolled above
                raise WALError("io_error", "the write-ahead log has no segment to write")
            try:
                self._write_all(active, (head, payload), size)
            except OSError as exc:
                reason: Literal["no_space", "io_error"] = "no_space" if exc.errno in _NO_SPACE else "io_error"
                self.metrics.append_errors_total.labels(reason).inc()
                if not self._block_on(exc.errno, f"writing {active.path.name} failed ({exc.strerror or exc})"):
                    self._set_fault(f"writing {active.path.name} failed ({exc.strerror or exc})")
                raise WALError(reason, f"the write-ahead log could not be written ({exc.strerror or exc})") from None
            self._position = position
            active.size += size
            self._total += size
            self.metrics.appended_bytes_total.inc(size)
            self.metrics.bytes.set(self._total)
            if self.config.fsync == "always" and not self._syncing:  # a sync under way looks again when it ends
                self._wanted.notify()
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
        """Start a new segment (the old one is synced first; its descriptor stays open)."""
        index = max(self._next_index, max(self._segments, default=0) + 1)
        path = self.directory / f"{index:012d}{SUFFIX}"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise WALError("no_space" if exc.errno in _NO_SPACE else "io_error", f"cannot create {path.name} ({exc.strerror or exc})",
                           exc.errno) from None
        try:
            self._write(fd, (MAGIC,))
        except OSError as exc:
            os.close(fd)
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
            raise WALError("no_space" if exc.errno in _NO_SPACE else "io_error", f"cannot start {path.name} ({exc.strerror or exc})",
                           exc.errno) from None
        try:
            os.fsync(self._dir_fd)  # the new file's name survives a power loss too
        except OSError as exc:
            log.warning("could not sync the write-ahead log directory (%s)", exc)
        old = self._active
        if old is not None and old.fd >= 0:
            with self._sync_lock:
                try:
                    if self.config.fsync != "never":
                        SYNC_DATA(old.fd)
                except OSError as exc:
                    log.error("fsync of write-ahead log segment %s failed (%s)", old.path.name, exc)
                    self._failed.append((self._synced, self._position))
        self._next_index = index + 1
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
                self._released.discard(trace_id)  # buffered again (late spans): held until settled and released
                held = self._holds.get(trace_id)
                if held is None:
                    self._holds[trace_id] = {segment: position}
                else:
                    held[segment] = position

    def settle(self, trace_ids: Sequence[str], through: int) -> None:
        """These runs were diagnosed (with every span up to ``through``) and handed to the
        exporters: record it. Their spans stay in the log while the assembler retains the runs
        (late spans revive them after a restart too) and go once they are also released."""
        with self._cond:
            held = [t for t in trace_ids if t in self._holds]
            if not held:
                return
            self._append_settled(through, held)
            for trace_id in held:
                self._through[trace_id] = max(self._through.get(trace_id, 0), through)
                if trace_id in self._released:
                    self._free(trace_id)
            self._delete_settled()

    def _append_settled(self, through: int, trace_ids: list[str]) -> None:
        """Write a settled record (not while at fault: a repair writes what is settled by then)."""
        if self._active is None or self._stopping or self.fault is not None:
            return
        payload = encode_settled(through, trace_ids)
        head = encode_head(SETTLED, self._position + 1, time.time(), payload)
        try:
            self._write_all(self._active, (head, payload), len(head) + len(payload))
        except OSError as exc:  # without the record a restart replays these runs; the store's record of them stops a second count
            self._block_on(exc.errno, f"writing {self._active.path.name} failed ({exc.strerror or exc})")
            return
        self._position += 1
        self._active.size += len(head) + len(payload)
        self._total += len(head) + len(payload)
        described = {segment for t in trace_ids for segment in self._holds.get(t, ())}
        self._active.needs |= described - {self._active.index}

    def release(self, trace_ids: Sequence[str]) -> None:
        """The assembler no longer retains these runs: their settled spans may leave the log."""
        with self._cond:
            for trace_id in trace_ids:
                if trace_id in self._holds:
                    self._released.add(trace_id)
                    self._free(trace_id)
            self._delete_settled()

    def _free(self, trace_id: str) -> None:
        """Drop the holds of a released run that its settled diagnosis covers."""
        held, through = self._holds[trace_id], self._through.get(trace_id, 0)
        for segment, last in list(held.items()):
            if last <= through:
                del held[segment]
                seg = self._segments.get(segment)
                if seg is not None:
                    seg.live.discard(trace_id)
        if not held:
            del self._holds[trace_id]
            self._through.pop(trace_id, None)
            self._released.discard(trace_id)

    def _delete_settled(self) -> None:
        changed = self.blocked_kind != "no_permission"  # retried once ``check`` finds the folder writable
        while changed:
            changed = False
            for seg in list(self._segments.values()):
                if seg is self._active or seg.live or seg.needs & self._segments.keys():
                    continue
                try:
                    seg.path.unlink(missing_ok=True)
                except OSError as exc:
                    if self._block_on(exc.errno, f"segment {seg.path.name} cannot be deleted ({exc.strerror or exc})"):
                        break  # retried once ``check`` finds the folder writable again
                    log.error("cannot delete write-ahead log segment %s (%s)", seg.path, exc)
                    continue
                if seg.fd >= 0:
                    os.close(seg.fd)
                    seg.fd = -1
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

    # --- durability: group commit -----------------------------------------------------------------
    def _outcome(self, position: int) -> WALError | None | Literal[False]:
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
        """The same for the HTTP receiver's event loop: concurrent requests share one fsync. The
        append that wrote ``position`` has woken the flusher already (or it is syncing and looks
        again when done)."""
        with self._cond:
            outcome = self._outcome(position)
            if outcome is not False:
                return outcome
            loop = asyncio.get_running_loop()
            future = loop.create_future()
            self._async_waiters.append((position, loop, future))
        return await future

    def _flush_loop(self) -> None:
        """One sync per round for every record appended before it began (a group commit). Each
        round wakes each event loop with waiters once, and the waiting threads once; appends
        made while it syncs do not wake the flusher (it looks for them when the sync ends). The
        file is checked right after the sync (deleted or cut short, what was synced would not
        survive a restart), against the size it had when the round began."""
        interval = self.config.fsync_interval_seconds if self.config.fsync == "interval" else None
        while True:
            with self._cond:
                while not self._stopping and self._position <= self._synced:
                    self._wanted.wait(interval)
                if self._stopping:
                    return
                target, active = self._position, self._active
                size = active.size if active is not None else 0
                self._syncing = True
            error: OSError | None = None
            problem: str | None = None
            elapsed = None
            with self._sync_lock:
                if active is not None and active.fd >= 0:  # else a roll synced and closed it
                    started = time.perf_counter()
                    try:
                        SYNC_DATA(active.fd)
                    except OSError as exc:
                        error = exc
                    elapsed = time.perf_counter() - started
                    problem = f"fsync failed ({error})" if error is not None else _segment_problem(active, size)
            with self._cond:
                self._syncing = False
                if problem is not None:  # synced to a file that is gone is not durable either: refused
                    self._failed = [*self._failed[-7:], (self._synced, target)]
                    self._synced = target  # not durable: the waiters in the failed range are refused
                    self._set_fault(problem)
                else:
                    self._synced = max(self._synced, target)
                settled = self._take_settled()
                self._cond.notify_all()
            _hand_back(settled)
            if elapsed is not None:
                self.metrics.fsync_seconds.observe(elapsed)
            if interval is not None:
                with self._cond:
                    if not self._stopping:
                        self._wanted.wait(interval)

    # --- faults: the folder or a file gone, replaced or failing ----------------------------------------
    @property
    def healthy(self) -> bool:
        return self.fault is None and self.blocked is None

    def _block_on(self, code: int | None, reason: str) -> bool:
        """A write failed for lack of space or permission: readiness turns false until a probe
        passes (``check``), with one ERROR line; whether ``code`` is such a failure."""
        kind: Literal["no_space", "no_permission"] | None = (
            "no_space" if code in _NO_SPACE else "no_permission" if code in _NO_PERMISSION else None)
        if kind is None:
            return False
        if self.blocked is None:
            self.blocked, self.blocked_kind = reason, kind
            self.metrics.faults_total.inc()
            now = time.monotonic()
            self._said_blocked = now - self._last_block_line >= QUIET_SECONDS
            if self._said_blocked:
                self._last_block_line = now
                log.error("write-ahead log %s cannot be written: %s; readiness is false, and requests the log cannot take "
                          "are refused (503), until it can write again%s", self.directory, reason,
                          "; the diagnosed runs kept for late spans give their space back" if kind == "no_space" else "")
        return True

    def _probe(self) -> OSError | None:
        """Create, fill and remove a small file in the folder: ``None`` when the log can write again."""
        path = self.directory / PROBE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError as exc:
            return exc
        problem: OSError | None = None
        try:
            os.posix_fallocate(fd, 0, PROBE_BYTES)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):  # a filesystem that cannot allocate ahead
                problem = exc
        finally:
            os.close(fd)
        try:
            path.unlink()
        except OSError as exc:
            problem = problem or exc
        return problem

    def _unblock(self) -> None:
        if self._said_blocked:
            self._last_block_line = time.monotonic()
            log.warning("write-ahead log %s can be written again (it could not: %s); readiness is true", self.directory, self.blocked)
        self.blocked = self.blocked_kind = None
        self._append_settled_again()
        self._delete_settled()

    def _append_settled_again(self) -> None:
        """Record the runs settled while no record could be written."""
        by_through: dict[int, list[str]] = {}
        for trace_id, through in self._through.items():
            by_through.setdefault(through, []).append(trace_id)
        for through, trace_ids in by_through.items():
            self._append_settled(through, trace_ids)

    def _set_fault(self, reason: str) -> None:
        if self.fault is None:
            self.fault = reason
            self.metrics.faults_total.inc()
            log.error("write-ahead log %s: %s; requests are refused (503) and readiness is false until it is repaired",
                      self.directory, reason)

    @staticmethod
    def _file_problem(segment: Segment | None) -> str | None:
        """Why what was written to ``segment`` would not survive a restart (``None``: it would)."""
        if segment is None or segment.fd < 0:
            return None
        return _segment_problem(segment, segment.size)

    def _watch_active(self) -> None:
        """One ``fstat`` per append: a record must not go to a file no restart will read."""
        problem = self._file_problem(self._active)
        if problem is not None:
            self._set_fault(problem)

    def _layout_problem(self) -> str | None:
        """The folder or the active segment's name no longer leads to the files this log writes."""
        try:
            here, ours = os.stat(self.directory), os.fstat(self._dir_fd)
        except OSError as exc:
            return f"the folder cannot be read ({exc.strerror or exc})"
        if (here.st_dev, here.st_ino) != (ours.st_dev, ours.st_ino):
            return "the folder was deleted or replaced"
        active = self._active
        if active is not None and active.fd >= 0:
            try:
                named, held = os.stat(active.path), os.fstat(active.fd)
            except OSError:
                return f"segment {active.path.name} was deleted"
            if named.st_ino != held.st_ino:
                return f"segment {active.path.name} was replaced"
        return self._file_problem(active)

    def check(self) -> bool:
        """Look for a fault (run periodically) and try to repair one; ``True`` when healthy."""
        with self._cond:
            if self._stopping or (self._active is None and self.blocked is None):
                return self.healthy
            if self.blocked is not None:
                if self._probe() is not None:
                    return False
                if self._active is None:
                    try:
                        self._roll()
                    except WALError:
                        return False
                self._unblock()
            if self.fault is None:
                problem = self._layout_problem()
                if problem is None:
                    return True
                self._set_fault(problem)
            try:
                rewritten = self._repair()
            except (OSError, WALInUse, WALError) as exc:
                log.debug("write-ahead log still at fault (%s)", exc)
                return False
            log.warning("write-ahead log %s repaired after: %s (%d segment(s) written again from their open descriptors); requests are accepted again",
                        self.directory, self.fault, rewritten)
            self.fault = None
            self._append_settled_again()  # settled while at fault: recorded now
            settled = self._take_settled()
            self._cond.notify_all()
        _hand_back(settled)
        return True

    def _repair(self) -> int:
        """Re-create the folder, rewrite every segment still needed whose file is gone (from the
        descriptor kept open on it) and start a new active segment; how many were rewritten."""
        self.directory.mkdir(parents=True, exist_ok=True)
        here, ours = os.stat(self.directory), os.fstat(self._dir_fd)
        if (here.st_dev, here.st_ino) != (ours.st_dev, ours.st_ino):
            fd = self._lock_directory()
            os.close(self._dir_fd)
            self._dir_fd = fd
        with self._sync_lock:  # the flusher must not sync a descriptor closed here
            rewritten = sum(self._rewrite(seg) for seg in sorted(self._segments.values(), key=lambda g: g.index))
        os.fsync(self._dir_fd)
        self._roll()
        return rewritten

    def _rewrite(self, seg: Segment) -> bool:
        """Write ``seg`` again under its name from its open descriptor, unless its file is intact."""
        try:
            if os.stat(seg.path).st_ino == os.fstat(seg.fd).st_ino and not self._file_problem(seg):
                return False
        except FileNotFoundError:
            pass
        data = os.pread(seg.fd, seg.size, 0)
        spare = seg.path.with_name(seg.path.name + ".tmp")
        fd = os.open(spare, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            os.replace(spare, seg.path)
        except OSError:
            os.close(fd)
            raise
        os.close(seg.fd)
        seg.fd = fd
        return True

    def _take_settled(self) -> dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, WALError | None]]]:
        """The event-loop waiters whose outcome is known now, by loop (taken off the list, under
        the lock); :func:`_hand_back` gives them their outcome once the lock is released."""
        waiting = []
        settled: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, WALError | None]]] = {}
        for position, loop, future in self._async_waiters:
            outcome = self._outcome(position)
            if outcome is False:
                waiting.append((position, loop, future))
            else:
                settled.setdefault(loop, []).append((future, outcome))
        self._async_waiters = waiting
        return settled


def _read_all(fd: int) -> bytes:
    """A segment's whole content, through its descriptor (the file may have no name any more)."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 24, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _segment_problem(segment: Segment, size: int) -> str | None:
    """Why the first ``size`` bytes written to ``segment`` would not survive a restart (``None``: they would)."""
    try:
        st = os.fstat(segment.fd)
    except OSError as exc:
        return f"segment {segment.path.name} cannot be read ({exc.strerror or exc})"
    if st.st_nlink == 0:
        return f"segment {segment.path.name} was deleted"
    if st.st_size < size:
        return f"segment {segment.path.name} was truncated"
    return None


def _hand_back(settled: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, WALError | None]]]) -> None:
    """One wake-up per event loop for all its waiters settled in a round (the lock released:
    waking a loop is a system call, and appends must not wait for it)."""
    for loop, outcomes in settled.items():
        try:
            loop.call_soon_threadsafe(_settle_futures, outcomes)
        except RuntimeError:  # the loop is closed: nobody waits on its futures any more
            pass


def _settle_futures(outcomes: list[tuple[asyncio.Future, WALError | None]]) -> None:
    for future, outcome in outcomes:
        if not future.done():
            future.set_result(outcome)
