"""How many module boundaries one trace crosses on its way through ``ragtrace serve``.

Runs ``ragtrace demo`` (the embedded evaluator, the bundled app, the offline judge) under a
profiling hook on every thread and records, from the first question asked until the last trace
is scored (start-up and shutdown left out), each call from one service module into another:
``ragtrace_consumers.*`` (less the demo app and the commands, which are not the service) and
``ragtrace.evaluation.*``. A *boundary* is one distinct (caller module, callee module) pair met
while the demo's traces are received, stored, read, scored and written back; *crossings* counts
every such call. The demo's six traces take the same path, so the pairs are those of one trace
(docs/architecture.md, "One trace, room by room").

    python scripts/module_crossings.py [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from collections import Counter
from types import FrameType

__all__ = ["Crossings", "measure"]

_SERVICE = ("ragtrace_consumers.", "ragtrace.evaluation")
_NOT_SERVICE = ("ragtrace_consumers.demo", "ragtrace_consumers.commands")
_LAST_SCORED = re.compile(r"\s*scored (\d+)/\1:")


def _service_module(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    name = frame.f_globals.get("__name__")
    if not isinstance(name, str) or not name.startswith(_SERVICE):
        return None
    return None if name.startswith(_NOT_SERVICE) else name


class Crossings:
    """Calls between service modules, counted per (caller, callee) pair."""

    def __init__(self) -> None:
        self.pairs: Counter[tuple[str, str]] = Counter()
        self.on = False
        self._lock = threading.Lock()

    def hook(self, frame: FrameType, event: str, _arg: object) -> None:
        if event != "call" or not self.on:
            return
        callee = _service_module(frame)
        if callee is None:
            return
        caller = _service_module(frame.f_back)
        if caller is None or caller == callee:
            return
        with self._lock:
            self.pairs[(caller, callee)] += 1

    @property
    def boundaries(self) -> int:
        return len(self.pairs)

    @property
    def crossings(self) -> int:
        return sum(self.pairs.values())


def measure() -> Crossings:
    """Run the demo once under the hook; the pairs it recorded."""
    from ragtrace_consumers.demo.run import run_demo

    seen = Crossings()

    def progress(line: str) -> None:
        if line.startswith("Asking the demo app"):
            seen.on = True
        elif _LAST_SCORED.match(line):
            seen.on = False

    threading.setprofile(seen.hook)
    sys.setprofile(seen.hook)
    try:
        run_demo(judge_name="lexical", progress=progress)
    finally:
        seen.on = False
        sys.setprofile(None)
        threading.setprofile(None)
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the pairs as JSON")
    args = parser.parse_args(argv)
    seen = measure()
    if args.json:
        print(
            json.dumps(
                {
                    "boundaries": seen.boundaries,
                    "crossings": seen.crossings,
                    "pairs": [[a, b, n] for (a, b), n in sorted(seen.pairs.items())],
                },
                indent=1,
            )
        )
    else:
        for (a, b), n in sorted(seen.pairs.items()):
            print(f"{n:7d}  {a} -> {b}")
        print(f"{seen.boundaries} module boundaries, {seen.crossings} calls across them")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
