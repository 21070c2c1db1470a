"""Start-up of ``ragtrace consume`` against dependencies that may not be up yet.

:func:`wait_for` tries to reach one dependency until it answers or ``wait_s`` (config key
``health.startup_wait_s``) has passed, then raises :class:`DependencyUnavailable`, whose message
is one line naming the dependency, its address and the last error: the CLI prints it and exits
1, without a traceback. Once running, the consumer never exits for an outage
(:mod:`ragtrace_consumers.runtime.retry`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from ragtrace_consumers.errors import DependencyUnavailable

__all__ = ["wait_for"]

_log = logging.getLogger(__name__)
T = TypeVar("T")
_MAX_DELAY_S = 2.0


def wait_for(
    name: str,
    address: str,
    connect: Callable[[], T],
    wait_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``connect()``'s result once it succeeds; retried (backoff up to 2 s) for ``wait_s``."""
    started = clock()
    delay = 0.1
    warned = False
    while True:
        try:
            return connect()
        except Exception as exc:  # any failure to connect is retried
            waited = clock() - started
            if waited >= wait_s:
                raise DependencyUnavailable(name, address, waited, exc) from exc
            if not warned:
                _log.warning("waiting up to %.0f s for %s at %s: %r", wait_s, name, address, exc)
                warned = True
            sleep(min(delay, max(0.0, wait_s - waited)))
            delay = min(delay * 2, _MAX_DELAY_S)
