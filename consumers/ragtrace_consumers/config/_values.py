"""The value types of the settings: how a value from the YAML file, or an environment variable's
text, is read as each type, and the rule each type checks.

A reader (:func:`_read`) turns the file's and the environment's words into the type (booleans by the
words of :func:`ragtrace._config.parse_bool`, never a number from a boolean, ``""`` and ``null`` as
None for an optional key). A rule (:class:`_Check`) then says what is wrong with the value, in the
words the error shows (``must be > 0, got 0``), and adds the same rule to the key's JSON schema.
A problem is raised as :func:`fail`'s error; the settings model names the key and its source.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import yaml
from pydantic import (
    BeforeValidator,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainValidator,
    SecretStr,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError, core_schema

from ragtrace._config import parse_bool
from ragtrace_consumers.scoring.sampling import SamplingRule, parse_rules

__all__ = [
    "REDACTED",
    "Ascii",
    "Bool",
    "Float",
    "Int",
    "MappingSpec",
    "NonEmpty",
    "NonNegative",
    "NonNegativeInt",
    "OptHttpUrl",
    "OptNonEmpty",
    "OptPositiveInt",
    "OptSecret",
    "OptStr",
    "OptUrl",
    "Patterns",
    "Port",
    "Positive",
    "PositiveInt",
    "Rate",
    "Rules",
    "Str",
    "Url",
    "fail",
    "one_of",
]

REDACTED = "***"
"""What a secret reads as wherever it is shown (errors, ``--print-config``)."""


def fail(message: str) -> PydanticCustomError:
    """A validation error whose message is ``message`` as written (the key is named around it)."""
    return PydanticCustomError("ragtrace_config", "{message}", {"message": message})


def _whole(raw: str | float) -> int | None:
    if isinstance(raw, float):
        return int(raw) if raw.is_integer() else None
    return int(raw) if isinstance(raw, int) or re.fullmatch(r"\s*[-+]?\d+\s*", raw) else None


def _number(raw: str | float) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None


_KINDS: dict[type, tuple[str, Callable[[Any], object]]] = {
    bool: ("boolean", parse_bool),
    int: ("integer", _whole),
    float: ("number", _number),
    str: ("string", str),
    SecretStr: ("string", lambda raw: SecretStr(str(raw))),
}


def _read(kind: type, *, optional: bool = False) -> BeforeValidator:
    """Reads a file value, or an environment variable's text, as ``kind`` (booleans by the words
    of ``parse_bool``, numbers never from booleans); ``optional``: null, "" and "null" read None."""
    word, parse = _KINDS[kind]

    def read(raw: object) -> object:
        if raw is None or (
            optional and isinstance(raw, str) and raw.strip().lower() in ("", "null")
        ):
            if optional:
                return None
            raise fail("a value is required")
        value: object = None
        if isinstance(raw, (bool, SecretStr)):
            value = raw if kind in (bool, SecretStr) and isinstance(raw, kind) else None
        elif isinstance(raw, (str, int, float)) and (kind is not bool or isinstance(raw, str)):
            value = parse(raw)
        elif kind is str and isinstance(raw, os.PathLike):  # a path given in code
            value = os.fspath(raw)
        if value is None:
            raise fail(f"expected {word}, got {REDACTED if kind is SecretStr else repr(raw)}")
        return value

    return BeforeValidator(read)


@dataclass(frozen=True)
class _Check:
    """A key's rule: ``problem`` says what is wrong with a value (None: nothing); ``schema`` is the
    same rule in JSON schema, added to the key's schema."""

    problem: Callable[[Any], str | None]
    schema: dict[str, Any]

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {**handler(schema), **self.schema}

    def _check(self, value: Any) -> Any:
        problem = None if value is None else self.problem(value)
        if problem:
            raise fail(f"{problem}, got {value!r}")
        return value


def _rule(test: Callable[[Any], bool], problem: str, **schema: Any) -> _Check:
    return _Check(lambda v: None if test(v) else problem, schema)


def one_of(*choices: str) -> _Check:
    return _rule(lambda v: v in choices, f"must be one of {', '.join(choices)}", enum=list(choices))


def _mapping_spec(spec: str) -> str | None:
    from ragtrace_consumers.readers.mapping import resolve

    try:
        resolve({}, spec)
    except ValueError as exc:
        return str(exc)
    return None


def _structured(raw: object) -> object:
    """``raw`` as is, or parsed when it is text (an environment variable holds JSON or YAML)."""
    if not isinstance(raw, str):
        return raw
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise fail(f"not valid JSON or YAML: {exc}") from None


def _to_rules(raw: object) -> tuple[SamplingRule, ...]:
    """Sampling rules from the file (a YAML list) or the environment (JSON or YAML text)."""
    raw = _structured(raw)
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
        raise fail(f"expected a list of rules, got {type(raw).__name__}")
    if all(isinstance(r, SamplingRule) for r in raw):
        return tuple(raw)
    try:
        return parse_rules(raw, where="")
    except (TypeError, ValueError) as exc:
        raise fail(str(exc)) from None


_positive = _rule(lambda v: v > 0 and math.isfinite(v), "must be > 0", exclusiveMinimum=0)
_URL_SCHEMES = ("http", "https", "redis", "rediss", "unix")
_RULE_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "match": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": {"type": "string"},
            },
            "recall_rate": {"type": "number", "minimum": 0, "maximum": 1},
            "judge_rate": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["match"],
        "additionalProperties": False,
    },
}

# The types of the sections' keys: a reader, then (most) one rule.
Bool = Annotated[bool, _read(bool)]
Int = Annotated[int, _read(int)]
Float = Annotated[float, _read(float)]
Str = Annotated[str, _read(str)]
OptStr = Annotated[str | None, _read(str, optional=True)]
OptSecret = Annotated[SecretStr | None, _read(SecretStr, optional=True)]
Positive = Annotated[Float, _positive]
PositiveInt = Annotated[Int, _Check(_positive.problem, {"minimum": 1})]
OptPositiveInt = Annotated[
    Annotated[int | None, _read(int, optional=True)], _Check(_positive.problem, {"minimum": 1})
]
NonNegative = Annotated[
    Float, _rule(lambda v: v >= 0 and math.isfinite(v), "must be >= 0", minimum=0)
]
NonNegativeInt = Annotated[Int, _rule(lambda v: v >= 0, "must be >= 0", minimum=0)]
Rate = Annotated[
    Float, _rule(lambda v: 0.0 <= v <= 1.0, "must be between 0 and 1", minimum=0, maximum=1)
]
Port = Annotated[
    Int,
    _rule(
        lambda v: 0 <= v <= 65535,
        "must be within 0..65535 (0: a free port)",
        minimum=0,
        maximum=65535,
    ),
]
_non_empty = _rule(lambda v: bool(v.strip()), "must be non-empty", minLength=1)
NonEmpty = Annotated[Str, _non_empty]
OptNonEmpty = Annotated[OptStr, _non_empty]
Ascii = Annotated[Str, _rule(str.isascii, "must be ASCII", pattern="^[\\x00-\\x7F]*$")]
_url = _rule(
    lambda v: v.startswith(tuple(f"{s}://" for s in _URL_SCHEMES)),
    "must be a URL",
    pattern=f"^({'|'.join(_URL_SCHEMES)})://",
)
Url = Annotated[Str, _url]
OptUrl = Annotated[OptStr, _url]
OptHttpUrl = Annotated[
    OptStr,
    _rule(
        lambda v: v.startswith(("http://", "https://")),
        "must be an http(s) URL",
        pattern="^https?://",
    ),
]
MappingSpec = Annotated[OptStr, _Check(_mapping_spec, {})]
Rules = Annotated[tuple[SamplingRule, ...], PlainValidator(_to_rules), WithJsonSchema(_RULE_SCHEMA)]


def _to_patterns(raw: object) -> dict[str, str]:
    """Named regular expressions from the file (a YAML mapping) or the environment (JSON or
    YAML text); each is compiled, so a bad one is refused here, naming it."""
    raw = _structured(raw)
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise fail("expected a mapping of pattern name to regular expression (both text)")
    from ragtrace.evaluation.redaction import RedactionError, Redactor

    try:
        Redactor.build((), raw)
    except RedactionError as exc:
        raise fail(str(exc)) from None
    return dict(raw)


Patterns = Annotated[
    dict[str, str],
    PlainValidator(_to_patterns),
    WithJsonSchema({"type": "object", "additionalProperties": {"type": "string"}}),
]
