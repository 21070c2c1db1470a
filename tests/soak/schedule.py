"""The soak's seeded fault schedule: which faults, when, for how long, against what.

:func:`fault_schedule` is a pure function of its arguments, so a run is replayed by passing the
printed seed (and the same duration) again. Every kind in ``kinds`` occurs at least once (in a
seeded order) before any repeats; the gap before each fault is drawn from ``gap_s``, and with
probability ``overlap`` the next fault starts together with the previous one (several at once).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["FAULT_KINDS", "Fault", "fault_schedule"]

FAULT_KINDS: tuple[str, ...] = (
    "kill_replica",  # SIGKILL one consume replica, start a new one after `hold_s`
    "sigterm_in_rebalance",  # start a replica, SIGTERM another while the group rebalances
    "redis_restart",  # stop Redis, start it again after `hold_s` (append-only file kept)
    "redis_unreachable",  # SIGSTOP Redis for `hold_s`, then SIGCONT
    "broker_restart",  # stop the Kafka broker cleanly, start it after `hold_s`
    "collector_restart",  # stop the collector (SIGKILL for an odd target), start after `hold_s`
    "judge_rate_limited",  # the judge answers 429 for `hold_s`
    "judge_overloaded",  # the judge answers 529 for `hold_s`
    "judge_timeout",  # the judge hangs past the client's timeout for `hold_s`
    "judge_slow",  # the judge answers after `param` s for `hold_s`
)

# (least, most) seconds each kind holds; the unreachable Redis reaches the 30 s.
_HOLD: dict[str, tuple[float, float]] = {
    "kill_replica": (0.0, 3.0),
    "sigterm_in_rebalance": (0.5, 2.0),
    "redis_restart": (0.5, 3.0),
    "redis_unreachable": (2.0, 30.0),
    "broker_restart": (1.0, 4.0),
    "collector_restart": (0.5, 2.0),
    "judge_rate_limited": (3.0, 20.0),
    "judge_overloaded": (3.0, 20.0),
    "judge_timeout": (3.0, 15.0),
    "judge_slow": (5.0, 25.0),
}


@dataclass(frozen=True)
class Fault:
    """One fault: ``kind`` injected ``at_s`` seconds into the fault phase, held ``hold_s``.

    ``target`` picks the replica (an index taken modulo the replicas alive at the time), or for
    ``collector_restart`` the signal (SIGKILL when odd, SIGTERM when even); ``param`` is
    kind-specific (the slow judge's delay in seconds)."""

    at_s: float
    kind: str
    hold_s: float
    target: int = 0
    param: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"Fault.kind: one of {FAULT_KINDS}, got {self.kind!r}")
        if self.at_s < 0 or self.hold_s < 0:
            raise ValueError(f"Fault: negative time in {self}")

    @property
    def end_s(self) -> float:
        return self.at_s + self.hold_s

    @property
    def sigkill(self) -> bool:
        """A ``collector_restart`` that kills the collector (SIGKILL) rather than stopping it."""
        return self.kind == "collector_restart" and self.target % 2 == 1

    def describe(self) -> str:
        extra = f" target={self.target}" if "replica" in self.kind or "sigterm" in self.kind else ""
        if self.kind == "collector_restart":
            extra += " SIGKILL" if self.sigkill else " SIGTERM"
        if self.kind == "judge_slow":
            extra += f" delay={self.param:.2f}s"
        return f"t+{self.at_s:6.1f}s {self.kind:<20} hold={self.hold_s:4.1f}s{extra}"


def fault_schedule(
    seed: int,
    duration_s: float,
    *,
    gap_s: tuple[float, float] = (20.0, 60.0),
    overlap: float = 0.3,
    kinds: tuple[str, ...] = FAULT_KINDS,
    max_hold_s: float | None = None,
    slow_delay_s: tuple[float, float] = (0.2, 0.8),
) -> list[Fault]:
    """The faults of a fault phase of ``duration_s`` seconds, by start time; each one ends
    (``end_s``) within the phase. ``max_hold_s`` caps every hold (short runs)."""
    if not kinds or any(k not in FAULT_KINDS for k in kinds):
        raise ValueError(f"kinds: a non-empty subset of {FAULT_KINDS}, got {kinds}")
    if not 0 < gap_s[0] <= gap_s[1] or not 0.0 <= overlap < 1.0:
        raise ValueError(
            f"gap_s must be 0 < least <= most and overlap in [0, 1): {gap_s}, {overlap}"
        )
    rng = random.Random(seed)
    order: list[str] = []
    faults: list[Fault] = []
    at = rng.uniform(0.0, gap_s[0] / 2)
    while True:
        if not order:
            order = list(kinds)
            rng.shuffle(order)
        kind = order.pop()
        least, most = _HOLD[kind]
        if max_hold_s is not None:
            least, most = min(least, max_hold_s), min(most, max_hold_s)
        hold = round(rng.uniform(least, most), 1)
        fault = Fault(
            round(at, 1),
            kind,
            hold,
            target=rng.randrange(1 << 16),
            param=round(rng.uniform(*slow_delay_s), 2) if kind == "judge_slow" else 0.0,
        )
        if fault.end_s > duration_s:
            break
        faults.append(fault)
        if rng.random() >= overlap:
            at += rng.uniform(*gap_s)
    return faults
