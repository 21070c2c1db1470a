"""Run every ``bench/bench_*.py`` in turn; each writes its own section of docs/benchmarks.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    failed = 0
    for script in sorted(Path(__file__).resolve().parent.glob("bench_*.py")):
        print(f"== {script.name}", flush=True)
        failed |= subprocess.call([sys.executable, str(script)]) != 0
    sys.exit(1 if failed else 0)
