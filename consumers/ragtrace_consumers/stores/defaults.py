"""Lifecycle defaults every trace store and judge budget shares (memory, Redis, SQLite): one
set of numbers, so the stores keep the same semantics."""

from __future__ import annotations

__all__ = ["BUDGET_WINDOW_S", "DEFAULT_DEAD_TTL_S", "DEFAULT_MAX_ATTEMPTS", "DEFAULT_TTL_S"]

DEFAULT_TTL_S = 3600.0
"""Seconds a trace's spans live after their last append (abandoned traces expire)."""
DEFAULT_MAX_ATTEMPTS = 200
"""Parks after which a trace goes to the dead set."""
DEFAULT_DEAD_TTL_S = 7 * 86400.0
"""Seconds a dead trace's spans stay inspectable."""
BUDGET_WINDOW_S = 60.0
"""Seconds of the judge budget's sliding window (its limits are per minute)."""
