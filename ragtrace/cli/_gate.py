"""CI gates of ``ragtrace compare --fail-if``: conditions on a metric's change between reports.

A condition is ``METRIC<VALUE`` or ``METRIC>VALUE`` (``<=``/``>=`` too) on the change of the
metric's mean, B - A; ``METRIC:ci<VALUE`` tests the confidence interval's upper bound instead
(and ``METRIC:ci>VALUE`` its lower bound), so the gate fails only when the whole interval is past
the value — a significant change, not noise. ``recall@5<-0.02``: fail when mean recall@5 dropped
by more than 0.02.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from ragtrace.cli.output import fmt_num
from ragtrace.errors import RagtraceError
from ragtrace.evaluation.compare import Comparison

__all__ = ["Gate", "GateError", "parse_gates"]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
_CONDITION = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][A-Za-z0-9_@.-]*?)(?P<ci>:ci)?\s*(?P<op><=|>=|<|>)\s*"
    r"(?P<value>[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*$"
)


class GateError(RagtraceError, ValueError):
    """A condition that does not parse, or names a metric the reports do not have."""


@dataclass(frozen=True)
class Gate:
    """One condition: ``metric`` (a report metric name), ``op``, ``value``; ``ci`` compares the
    interval bound that must be past ``value`` for the change to be significant."""

    metric: str
    op: str
    value: float
    ci: bool = False

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise GateError(f"unknown operator {self.op!r}")
        if not math.isfinite(self.value):
            raise GateError(f"{self}: the value must be a finite number")

    def __str__(self) -> str:
        return f"{self.metric}{':ci' if self.ci else ''}{self.op}{self.value:g}"

    def observed(self, comparison: Comparison) -> float:
        """The number the condition tests: the delta, or the interval bound for ``ci``."""
        try:
            m = comparison.metric(self.metric)
        except (KeyError, ValueError):
            known = ", ".join(x.metric for x in comparison.metrics)
            raise GateError(
                f"--fail-if {self}: no metric {self.metric!r} in both reports (they have: {known})"
            ) from None
        if not self.ci:
            return m.delta
        return m.ci_high if self.op in ("<", "<=") else m.ci_low

    def fails(self, comparison: Comparison) -> bool:
        observed = self.observed(comparison)
        return not math.isnan(observed) and _OPS[self.op](observed, self.value)

    def describe(self, comparison: Comparison) -> str:
        what = "interval bound" if self.ci else "delta"
        return f"{what} {fmt_num(self.observed(comparison), 4, signed=True)}"


def parse_gates(text: str) -> tuple[Gate, ...]:
    """Comma-separated conditions; raises :class:`GateError` naming the bad one."""
    gates = []
    for part in text.split(","):
        m = _CONDITION.match(part)
        if m is None:
            raise GateError(f"not a condition: {part.strip()!r} (expected e.g. 'recall@5<-0.02')")
        gates.append(Gate(m["metric"], m["op"], float(m["value"]), ci=bool(m["ci"])))
    return tuple(gates)
