"""The distribution's version, in a module of its own so the SDK's modules can read it without
importing the package ``__init__`` (which imports them)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
