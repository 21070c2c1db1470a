"""Bad weather for the fake judge API: stretches of 429s, 529s, hung requests or slow replies.

:class:`JudgeWeather` wraps a :class:`~tests.fakes.anthropic_server.FakeAnthropic` responder.
While a *spell* lasts, every request is answered according to it, at the HTTP wire level, so the
real client's retry and timeout code runs:

* ``rate_limited``: 429 ``rate_limit_error`` with ``retry-after``;
* ``overloaded``: 529 ``overloaded_error``;
* ``timeout``: the normal reply, held ``hang_s`` seconds (longer than any client timeout set by
  the caller, so the client gives up first);
* ``slow``: the normal reply, held ``delay_s`` seconds.

Spells may overlap: an error spell wins over a delay, and the longest delay of the spells in
force applies. ``spell`` is thread-safe and may be called while the server is answering.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from tests.fakes.anthropic_server import Reply, overloaded, rate_limited

__all__ = ["SPELLS", "JudgeWeather", "Spell"]

SpellKind = Literal["rate_limited", "overloaded", "timeout", "slow"]
SPELLS: tuple[SpellKind, ...] = ("rate_limited", "overloaded", "timeout", "slow")


@dataclass(frozen=True)
class Spell:
    """One stretch of bad weather, in force from ``start`` to ``end`` (``time.monotonic()``)."""

    kind: SpellKind
    start: float
    end: float
    delay_s: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in SPELLS:
            raise ValueError(f"Spell.kind: one of {SPELLS}, got {self.kind!r}")
        if self.end < self.start or self.delay_s < 0:
            raise ValueError(f"Spell: end before start or negative delay: {self}")


class JudgeWeather:
    """A responder: ``inner(request)`` in fair weather, the spells' answers while they last.

    ``answered`` counts the replies by what they were (``ok`` or a spell kind)."""

    def __init__(
        self,
        inner: Callable[[Mapping[str, Any]], Reply],
        *,
        hang_s: float = 5.0,
        retry_after_s: float = 1.0,
    ) -> None:
        self._inner = inner
        self.hang_s = hang_s
        self.retry_after_s = retry_after_s
        self._spells: list[Spell] = []
        self._lock = threading.Lock()
        self.answered: Counter[str] = Counter()

    def spell(self, kind: SpellKind, seconds: float, delay_s: float = 0.0) -> Spell:
        """Bad weather of ``kind`` for ``seconds`` from now (``delay_s``: for ``slow``)."""
        now = time.monotonic()
        if kind == "timeout":
            delay_s = self.hang_s
        spell = Spell(kind, now, now + seconds, delay_s)
        with self._lock:
            self._spells = [s for s in self._spells if s.end > now] + [spell]
        return spell

    def clear(self) -> None:
        """Fair weather from now on."""
        with self._lock:
            self._spells = []

    def _in_force(self) -> list[Spell]:
        now = time.monotonic()
        with self._lock:
            return [s for s in self._spells if s.start <= now < s.end]

    def __call__(self, request: Mapping[str, Any]) -> Reply:
        spells = self._in_force()
        kinds = {s.kind for s in spells}
        if "rate_limited" in kinds:
            self._count("rate_limited")
            return rate_limited(self.retry_after_s)
        if "overloaded" in kinds:
            self._count("overloaded")
            return overloaded(self.retry_after_s)
        delay = max((s.delay_s for s in spells), default=0.0)
        answer = self._inner(request)
        if delay:
            self._count("timeout" if "timeout" in kinds else "slow")
            return replace(answer, delay=answer.delay + delay)
        self._count("ok")
        return answer

    def _count(self, what: str) -> None:
        with self._lock:
            self.answered[what] += 1
