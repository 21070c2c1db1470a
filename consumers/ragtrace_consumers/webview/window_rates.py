"""The overview's rates with their n and interval, the chosen period against the previous one
(beyond noise or not), and the not-grounded share corrected for the judge's measured error.

Each rate is a Wilson :class:`~ragtrace.evaluation.rates.Rate` (its n and 95 % interval): the
share of judged traces not grounded (groundedness below the threshold) and each cell's share of
the scored traces. With a time range chosen, each is compared with the period of equal length
just before it (the overview's ``previous``): a change is *beyond noise* when the pooled
two-proportion z-test gives p < 0.05 (:func:`~ragtrace.evaluation.rates.compare_rates`). The
not-grounded share is also corrected when the calibration stamp is of the judge in use
(:mod:`ragtrace.evaluation.hallucination_rate`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragtrace.evaluation.calibration import CalibrationStamp
from ragtrace.evaluation.hallucination_rate import HallucinationRate, hallucination_rate
from ragtrace.evaluation.judges.base import JudgeInfo
from ragtrace.evaluation.rates import Change, Rate, compare_rates, wilson
from ragtrace_consumers.webview.queries import CELLS, Overview

__all__ = ["NOT_GROUNDED", "WindowRates", "window_rates"]

NOT_GROUNDED = "not grounded (of judged)"


@dataclass(frozen=True)
class WindowRates:
    """``rates``: (name, rate) over the overview's traces, the not-grounded share first, then
    each cell's share. ``changes``: the same against the previous period (empty without a time
    range). ``not_grounded``: that share raw and corrected (or why not)."""

    rates: tuple[tuple[str, Rate], ...]
    changes: tuple[tuple[str, Change], ...]
    not_grounded: HallucinationRate


def window_rates(
    o: Overview, judge: JudgeInfo | None, stamp: CalibrationStamp | None
) -> WindowRates | None:
    """None before the overview has its headline (nothing scored under its filters)."""
    h = o.headline
    if h is None:
        return None
    total = sum(o.counts.values())
    rates = [(NOT_GROUNDED, wilson(h.not_grounded, h.judged))]
    rates += [(cell, wilson(o.counts.get(cell, 0), total)) for cell in CELLS]
    changes: list[tuple[str, Change]] = []
    p, before = o.previous, o.previous_counts
    if p is not None and before is not None:
        previous_total = sum(before.values())
        earlier = [(NOT_GROUNDED, wilson(p.not_grounded, p.judged))]
        earlier += [(cell, wilson(before.get(cell, 0), previous_total)) for cell in CELLS]
        changes = [
            (name, compare_rates(now, then))
            for (name, now), (_, then) in zip(rates, earlier, strict=True)
        ]
    return WindowRates(
        tuple(rates), tuple(changes), hallucination_rate(h.not_grounded, h.judged, judge, stamp)
    )
