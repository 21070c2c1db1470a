"""Finding the query, the context and the model among a decorated function's arguments.

Resolved once, when the function is decorated, into an :class:`ArgRef` (keyword name and/or
position) so that each call costs two lookups, not a signature bind. Rules:

* **Explicit.** ``query_arg=``/``context_arg=``/``model_arg=`` name a parameter (``str``) or a
  position (``int``, counting ``self`` for methods). A name the signature does not have (and no
  ``**kwargs`` to take it) raises ``ValueError`` when decorating.
* **By name.** Otherwise the first parameter, in signature order, whose name is in
  :data:`QUERY_NAMES` / :data:`CONTEXT_NAMES` / :data:`MODEL_NAMES`.
* **By position.** Otherwise the query is the first positional parameter other than ``self`` or
  ``cls``, and the context the positional parameter right after the query. A model is only ever
  found by name.

At call time the keyword wins over the position; a parameter not passed falls back to its
default value, if it has one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CONTEXT_NAMES", "MISSING", "MODEL_NAMES", "QUERY_NAMES", "ArgRef", "locate"]

QUERY_NAMES: tuple[str, ...] = (
    "query",
    "question",
    "q",
    "query_str",
    "query_text",
    "user_query",
    "prompt",
    "input",
    "text",
)
CONTEXT_NAMES: tuple[str, ...] = (
    "chunks",
    "context",
    "contexts",
    "context_chunks",
    "documents",
    "docs",
    "nodes",
    "passages",
    "sources",
    "retrieved",
    "results",
)
MODEL_NAMES: tuple[str, ...] = ("model", "model_name", "model_id")

MISSING: Any = object()
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True)
class ArgRef:
    """Where one argument sits: its keyword ``name``, its positional ``index``, its default."""

    name: str | None
    index: int | None
    default: Any = MISSING

    def get(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """The argument's value in this call, or :data:`MISSING`."""
        if self.name is not None and self.name in kwargs:
            return kwargs[self.name]
        if self.index is not None and self.index < len(args):
            return args[self.index]
        return self.default


def _params(fn: Callable[..., Any]) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return None


def _ref(params: list[inspect.Parameter], p: inspect.Parameter) -> ArgRef:
    index = params.index(p) if p.kind in _POSITIONAL else None
    name = p.name if p.kind is not inspect.Parameter.POSITIONAL_ONLY else None
    default = p.default if p.default is not inspect.Parameter.empty else MISSING
    return ArgRef(name, index, default)


def locate(
    fn: Callable[..., Any],
    role: str,
    explicit: str | int | None,
    names: tuple[str, ...],
    after: ArgRef | None = None,
    by_position: bool = True,
) -> ArgRef | None:
    """Where ``fn`` takes its ``role`` argument (query, context, model), by the module's rules.

    ``after`` is the query's place, for the context's positional rule. ``None``: not found.
    """
    params = _params(fn)
    if explicit is not None:
        return _explicit(fn, role, explicit, params)
    if params is None:
        if not by_position:
            return None
        return ArgRef(None, 0 if after is None else (after.index or 0) + 1)
    for p in params:
        if p.name in names and p.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            return _ref(params, p)
    if not by_position:
        return None
    positional = [p for p in params if p.kind in _POSITIONAL and p.name not in ("self", "cls")]
    if after is None:
        if positional:
            return _ref(params, positional[0])
        if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
            return ArgRef(None, 0)
        return None
    if after.index is None:
        return None
    later = [p for p in positional if params.index(p) > after.index]
    return _ref(params, later[0]) if later else None


def _explicit(
    fn: Callable[..., Any], role: str, explicit: str | int, params: list[inspect.Parameter] | None
) -> ArgRef:
    where = getattr(fn, "__qualname__", repr(fn))
    if isinstance(explicit, bool) or not isinstance(explicit, (str, int)):
        raise ValueError(f"{role}_arg must be a parameter name or position, got {explicit!r}")
    if isinstance(explicit, int):
        if explicit < 0:
            raise ValueError(f"{role}_arg must be a position >= 0, got {explicit}")
        if params is not None:
            positional = [p for p in params if p.kind in _POSITIONAL]
            if explicit < len(positional):
                return _ref(params, positional[explicit])
            if not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
                raise ValueError(
                    f"{role}_arg={explicit}: {where} has only {len(positional)} positional parameters"
                )
        return ArgRef(None, explicit)
    if params is not None:
        for p in params:
            if p.name == explicit and p.kind not in (
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            ):
                return _ref(params, p)
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            raise ValueError(f"{role}_arg={explicit!r}: {where} has no parameter of that name")
    return ArgRef(explicit, None)
