"""A span whose normalization raised: refused alone, and the fault told without its content.

Normalizing reads content as it arrives (JSON and Python literals, messages, tool values), so a
value no test foresaw can make it raise. Failing the request would lose every other span of it
and, since the sender retries a 5xx the same way, keep losing them. The decoder refuses the span
alone instead (``normalize_failed`` in the partial-success answer and in
``mast_spans_rejected_total``) and this module says where the fault lies: the exception's type
and the innermost frame in the answer, the frames in one ERROR line per distinct fault in the
log. The exception's message is left out of both, since it may quote the span's content.
"""

from __future__ import annotations

import logging
import os
import traceback

log = logging.getLogger("mast_otel.processors.ingest")

_MAX_LOGGED = 64  # distinct faults logged per process; the counter counts every span
_logged: set[tuple[str, str]] = set()


def normalize_failure(exc: BaseException) -> str:
    """The rejection detail for a span whose normalization raised ``exc``; logs the fault's frames
    the first time this type of fault is seen at this place."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{_short(frames[-1].filename)}:{frames[-1].lineno}" if frames else "?"
    kind = type(exc).__name__
    fault = (kind, where)
    if fault not in _logged and len(_logged) < _MAX_LOGGED:
        _logged.add(fault)
        path = " <- ".join(f"{_short(f.filename)}:{f.lineno} {f.name}" for f in reversed(frames[-8:]))
        log.error("normalizing a span failed (%s at %s); the span was refused, the rest of its request kept. "
                  "Frames, innermost first: %s", kind, where, path)
    return f"normalizing it failed ({kind} at {where}), a fault of the processor; the span was refused, the rest kept"


def _short(filename: str) -> str:
    """A frame's file as its last two path parts (``normalize/genai.py``): no host paths in answers."""
    head, name = os.path.split(filename)
    return f"{os.path.basename(head)}/{name}"
