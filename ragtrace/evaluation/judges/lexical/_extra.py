"""The offline judge's optional libraries (the ``judge`` extra), imported on first use."""

from __future__ import annotations

from functools import cache
from types import ModuleType

__all__ = ["LEXICAL_EXTRA", "require"]

LEXICAL_EXTRA = "the offline judge needs the judge extra: pip install 'ragtrace[judge]'"


@cache
def require(name: str) -> ModuleType:
    """Import one of the offline judge's libraries (the ``judge`` extra), naming the fix when it
    is missing; imported on first use so the core install never needs them."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"{LEXICAL_EXTRA} ({name} is not installed)") from exc
