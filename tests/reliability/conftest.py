"""The reliability tests drive the same harness as ``benchmarks/soak.py`` and ``benchmarks/faults.py``."""

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))
