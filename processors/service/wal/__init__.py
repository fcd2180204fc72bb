"""The write-ahead log of accepted spans (``wal:`` in the configuration): what makes an
acknowledged request survive a crash. ``records`` is the on-disk format, ``log`` the
component."""

from mast_otel.processors.service.wal.log import Appended, Recovered, SpanLog, WALError, WALInUse, WALMetrics

__all__ = ["Appended", "Recovered", "SpanLog", "WALError", "WALInUse", "WALMetrics"]
