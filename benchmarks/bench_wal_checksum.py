"""The write-ahead log's CRC-32 of every request body of the content-on corpus, zlib (what
``service/wal/records.py`` uses) against ISA-L (``isal``, where installed), in this process,
alternately. The call alone: ISA-L's is faster, but the log keeps zlib's because the server's
work around ISA-L's call cost more than it saved (docs/processor.md, "Performance").

    .venv/bin/python benchmarks/bench_wal_checksum.py [--traces 600] [--rounds 7]

Workload: ``bench_end_to_end.py --corpus``'s requests (the framework and team recordings, message
content on, repeated to ``--traces`` runs). Each round checksums every body both ways (in turns,
ISA-L first in odd rounds; the first round is left out), in CPU time; printed: each way's median
per request and per span, and the median over rounds of zlib / ISA-L. The two answers are
compared first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import zlib
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parents[1]
CORPORA = [ROOT / "tests" / "frameworks" / "corpus", ROOT / "tests" / "teams" / "corpus"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    from bench_end_to_end import corpus_requests

    try:
        from isal.isal_zlib import crc32
    except ImportError:
        sys.exit("isal is not installed: nothing to compare zlib with")
    bodies, spans, _ = corpus_requests(CORPORA, args.traces)
    ways: dict[str, Callable[[bytes], int]] = {"zlib": zlib.crc32, "isal": crc32}
    assert [zlib.crc32(b) for b in bodies] == [crc32(b) for b in bodies]
    times: dict[str, list[float]] = {name: [] for name in ways}
    for r in range(args.rounds + 1):
        for name in (("isal", "zlib") if r % 2 else ("zlib", "isal")):
            checksum = ways[name]
            started = time.process_time()
            for body in bodies:
                checksum(body)
            if r:
                times[name].append(time.process_time() - started)
    for name, spent in times.items():
        t = statistics.median(spent)
        print(f"{name}: {t / len(bodies) * 1e6:.2f} us per request, {t / spans * 1e6:.2f} us per span")
    ratios = [z / i for z, i in zip(times["zlib"], times["isal"])]
    print(f"zlib / isal: median {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}); "
          f"{len(bodies)} requests of {sum(map(len, bodies)) / len(bodies) / 1000:.1f} KB on average, {spans} spans")


if __name__ == "__main__":
    main()
