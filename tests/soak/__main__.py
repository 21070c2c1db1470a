"""``python -m tests.soak``: the long fault soak on demand (see tests/soak/run.py).

Prints the seed and the schedule, every fault as it is injected and lifted, then the figures;
exits 1 when the history shows an exactly-once violation, a lost trace or no lag recovery.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from tests.soak.run import SoakConfig, run_soak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=20.0, help="length of the fault phase")
    parser.add_argument("--rate", type=float, default=50.0, help="traces per second")
    parser.add_argument("--seed", type=int, default=None, help="schedule seed (random if unset)")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--gap", type=float, nargs=2, default=(20.0, 60.0), metavar=("MIN", "MAX"))
    parser.add_argument("--overlap", type=float, default=0.3)
    parser.add_argument("--calm", type=float, default=60.0, help="seconds of load after faults")
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds of load before")
    parser.add_argument("--max-hold", type=float, default=None, help="cap on any fault's hold")
    parser.add_argument("--drain", type=float, default=300.0, help="seconds to wait at the end")
    parser.add_argument("--no-big-trace", action="store_true")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="run the services in DIR and keep it (their logs and data) after the run",
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    config = SoakConfig(
        seed=seed,
        fault_s=args.minutes * 60,
        rate=args.rate,
        replicas=args.replicas,
        gap_s=tuple(args.gap),
        overlap=args.overlap,
        calm_s=args.calm,
        warmup_s=args.warmup,
        max_hold_s=args.max_hold,
        drain_timeout_s=args.drain,
        big_trace=not args.no_big_trace,
    )
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = run_soak(config, args.keep, log=lambda s: print(s, flush=True))
    else:
        with tempfile.TemporaryDirectory(prefix="ragtrace-soak-") as tmp:
            result = run_soak(config, Path(tmp), log=lambda s: print(s, flush=True))
    for line in result.lines():
        print(line)
    failed = result.verdict.violations or result.recovery_s is None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
