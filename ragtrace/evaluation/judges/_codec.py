"""Judge results to and from their stored JSON form, driven by the dataclass fields.

Results are stored (SQLite, Redis, cached judgements) and read back by later versions, so the
form is a contract: one key per field, in field order unless the class's ``Wire.order`` puts
keys first; a field made with :func:`omitted_at_default` is left out while it holds its
default; ``Wire.derived`` names properties written for readers (never read back), left out
while ``None``; ``Wire.fallback`` maps a field to the key older writers used for it. A new
field is stored and read with no code here.

Reading is by the field's type: ``str`` (any JSON scalar, as text), ``bool``, ``int`` and
``float`` (numbers or numeric strings), ``X | None``, a nested result (an object),
``tuple[X, ...]`` (a list; each item read as ``X``) and ``Mapping[str, object]`` (an object,
kept as is). A missing key reads as the field's default (without one: ``False`` for a bool,
``None`` for an optional field, ``()`` for a tuple); a ``null`` tuple or nested result as its
default too. A bad value raises ``TypeError`` naming its path
(``GroundednessResult.claims[2].support must be a number, got 'x'``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, Union

__all__ = ["Serialised", "Wire", "omitted_at_default"]

_OMIT = "ragtrace.omit_at_default"
_MISSING = dataclasses.MISSING


@dataclass(frozen=True)
class Wire:
    """A class's stored layout beyond its fields (see the module docstring)."""

    order: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()
    fallback: Mapping[str, str] = dataclasses.field(default_factory=dict)


def omitted_at_default(default: Any) -> Any:
    """A dataclass field left out of the stored form while it equals ``default``."""
    return dataclasses.field(default=default, metadata={_OMIT: True})


_T = TypeVar("_T", bound="Serialised")
_Reader = Callable[[object, str], object]


class Serialised:
    """Mixin of the result dataclasses: ``to_dict`` / ``from_dict`` from their fields."""

    WIRE: ClassVar[Wire] = Wire()

    def to_dict(self) -> dict[str, object]:
        """The stored form (JSON-ready)."""
        return _encode_object(self)

    @classmethod
    def from_dict(cls: type[_T], d: Mapping[str, object]) -> _T:
        """Read a stored form; ``TypeError`` names a bad value's path."""
        return typing.cast(_T, _read_object(cls, d, cls.__name__))


# --- writing ---------------------------------------------------------------------------------
# Every judged trace stores its result, so each class's writer is generated once as plain code
# (as ``dataclasses`` generates ``__init__``): a loop over the fields costs several times more.
_WRITERS: dict[type[Serialised], Callable[[Any], dict[str, object]]] = {}
_KEEP = object()


def _default(f: dataclasses.Field[Any]) -> object:
    if f.default is not _MISSING:
        return f.default
    if f.default_factory is not _MISSING:
        return f.default_factory()
    return _MISSING


def _json(tp: Any, x: str) -> str:
    """The expression turning ``x``, of type ``tp``, into JSON."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        inner = _json(next(a for a in args if a is not type(None)), x)
        return x if inner == x else f"(None if {x} is None else {inner})"
    if origin is tuple:
        item = _json(args[0], "item")
        return f"list({x})" if item == "item" else f"[{item} for item in {x}]"
    if origin is Mapping or tp is Mapping:
        return f"dict({x})"
    if isinstance(tp, type) and issubclass(tp, Serialised):
        return f"_encode_object({x})"
    return x


def _writer(cls: type[Serialised]) -> Callable[[Any], dict[str, object]]:
    """Generate ``cls``'s writer: its stored keys in order, each left out at its omitted value."""
    hints = typing.get_type_hints(cls)
    entries: dict[str, tuple[str, object]] = {}
    for f in dataclasses.fields(typing.cast(Any, cls)):
        omitted = _default(f) if f.metadata.get(_OMIT) else _KEEP
        entries[f.name] = (_json(hints[f.name], "value"), omitted)
    for name in cls.WIRE.derived:
        entries[name] = ("value", None)
    order = [key for key in cls.WIRE.order if key in entries]
    order += [key for key in entries if key not in order]
    scope: dict[str, object] = {"_encode_object": _encode_object}
    body = ["def write(obj):", "    out = {}"]
    for i, key in enumerate(order):
        expr, omitted = entries[key]
        body.append(f"    value = obj.{key}")
        if omitted is _KEEP:
            body.append(f"    out[{key!r}] = {expr}")
        else:
            scope[f"omitted_{i}"] = omitted
            body.append(f"    if value != omitted_{i}:")
            body.append(f"        out[{key!r}] = {expr}")
    body.append("    return out")
    exec("\n".join(body), scope)  # the source is built above from field names only
    return typing.cast(Callable[[Any], dict[str, object]], scope["write"])


def _encode_object(obj: Serialised) -> dict[str, object]:
    cls = type(obj)
    if cls not in _WRITERS:
        _WRITERS[cls] = _writer(cls)
    return _WRITERS[cls](obj)


# --- reading ---------------------------------------------------------------------------------
def _bad(path: str, what: str, value: object) -> TypeError:
    return TypeError(f"{path} must be {what}, got {value!r}")


def _read_str(value: object, path: str) -> object:
    if isinstance(value, (list, dict)) or value is None:
        raise _bad(path, "a string", value)
    return str(value)


def _read_bool(value: object, path: str) -> object:
    return bool(value)


def _read_float(value: object, path: str) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _bad(path, "a number", value)
    try:
        return float(value)
    except ValueError:
        raise _bad(path, "a number", value) from None


def _read_int(value: object, path: str) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _bad(path, "an integer", value)
    try:
        return int(float(value)) if isinstance(value, str) else int(value)
    except ValueError:
        raise _bad(path, "an integer", value) from None


def _read_mapping(value: object, path: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise _bad(path, "an object", value)
    return typing.cast(Mapping[str, object], value)


_SCALARS: dict[object, _Reader] = {
    str: _read_str,
    bool: _read_bool,
    float: _read_float,
    int: _read_int,
}


def _reader(tp: Any) -> _Reader:
    """The reader of one field type (see the module docstring)."""
    if tp in _SCALARS:
        return _SCALARS[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType) and type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        read = _reader(inner)
        return lambda value, path: None if value is None else read(value, path)
    if origin is tuple:
        read_item = _reader(args[0])

        def read_tuple(value: object, path: str) -> object:
            if not isinstance(value, list | tuple):
                raise _bad(path, "a list", value)
            return tuple(read_item(v, f"{path}[{i}]") for i, v in enumerate(value))

        return read_tuple
    if origin is Mapping or tp is Mapping:
        return _read_mapping
    if isinstance(tp, type) and issubclass(tp, Serialised):
        nested = tp
        return lambda value, path: _read_object(nested, _read_mapping(value, path), path)
    raise TypeError(f"no stored form for field type {tp!r}")


_Layout = tuple[tuple[str, str, _Reader, object, bool], ...]
_LAYOUTS: dict[type[Serialised], _Layout] = {}


def _layout(cls: type[Serialised]) -> _Layout:
    """Per field: (name, key older writers used or "", reader, default, null reads as default)."""
    if cls in _LAYOUTS:
        return _LAYOUTS[cls]
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(typing.cast(Any, cls)):
        tp = hints[f.name]
        default = _default(f)
        if default is _MISSING and tp is bool:
            default = False
        if default is _MISSING and type(None) in typing.get_args(tp):
            default = None
        if default is _MISSING and typing.get_origin(tp) is tuple:
            default = ()
        container = typing.get_origin(tp) is tuple or (
            isinstance(tp, type) and issubclass(tp, Serialised)
        )
        fallback = cls.WIRE.fallback.get(f.name, "")
        out.append((f.name, fallback, _reader(tp), default, container))
    _LAYOUTS[cls] = tuple(out)
    return _LAYOUTS[cls]


def _read_object(cls: type[Serialised], d: Mapping[str, object], path: str) -> object:
    kwargs: dict[str, object] = {}
    for name, fallback, read, default, null_is_default in _layout(cls):
        key = name if name in d or not fallback else fallback
        value = d.get(key, _MISSING)
        if value is _MISSING and default is _MISSING:
            raise TypeError(f"{path}.{name} is missing")
        if default is not _MISSING and (value is _MISSING or (value is None and null_is_default)):
            kwargs[name] = default
        else:
            kwargs[name] = read(value, f"{path}.{name}")
    return typing.cast(Any, cls)(**kwargs)
