"""argparse options generated from the settings model's flags (:mod:`ragtrace_consumers.config.flags`).

:func:`add_setting_flags` adds one option per key that declares a :class:`Flag`; each parses its
value by the key's type (a port, a positive whole number, one of the key's choices, a file to
read) and defaults to "not given", so :func:`with_flags` overrides only the keys whose flag was
given: flag > environment variable > file > default, and ``--print-config`` names them
``override``.
"""

from __future__ import annotations

import argparse
import typing
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import SecretStr

from ragtrace.cli._arg_types import STDIN_HELP, input_file, positive_int
from ragtrace.masking import register_secret
from ragtrace_consumers.config import SECTIONS, ConsumerConfig
from ragtrace_consumers.config.flags import FlaggedKey, flagged

__all__ = ["add_setting_flags", "port", "with_flags"]


def port(text: str) -> int:
    """A port number, 0..65535 (0: a free one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be within 0..65535, got {value}")
    return value


def _schema(key: FlaggedKey) -> dict[str, Any]:
    schema = SECTIONS[key.section].model_json_schema()["properties"][key.key]
    variants = schema.get("anyOf", [schema])
    return next((v for v in variants if v.get("type") != "null"), schema)


def _parser(key: FlaggedKey, schema: dict[str, Any]) -> Callable[[str], object] | None:
    """How the flag's text is read, by the key's type."""
    if key.flag.reads_file:
        return input_file
    if schema.get("type") == "integer":
        return port if schema.get("maximum") == 65535 else positive_int
    return None


def _options(key: FlaggedKey) -> dict[str, Any]:
    flag, default = key.flag, key.field.default
    options: dict[str, Any] = {
        "dest": flag.dest,
        "default": None,
        "help": flag.help.format(default=default, stdin=STDIN_HELP),
    }
    if flag.switch:
        return {**options, "action": "store_const", "const": not default}
    schema = _schema(key)
    if "enum" in schema:
        options["choices"] = tuple(schema["enum"])
    if (parse := _parser(key, schema)) is not None:
        options["type"] = parse
    if flag.metavar is not None:
        options["metavar"] = flag.metavar
    return options


def add_setting_flags(
    parser: argparse.ArgumentParser, sections: Sequence[str]
) -> tuple[FlaggedKey, ...]:
    """Add the flag of every key of ``sections`` that has one; returns them for :func:`with_flags`."""
    keys = tuple(flagged(ConsumerConfig, tuple(sections)))
    for key in keys:
        parser.add_argument(key.flag.name, **_options(key))
    return keys


def with_flags(
    config: ConsumerConfig, args: argparse.Namespace, keys: Sequence[FlaggedKey]
) -> ConsumerConfig:
    """``config`` with the keys whose flag was given set to its value (a secret's value is
    registered for masking first). Raises ``ConfigError`` naming the key for a bad value."""
    given: dict[str, dict[str, object]] = {}
    for key in keys:
        value = getattr(args, key.flag.dest)
        if value is None:
            continue
        if SecretStr in typing.get_args(key.field.annotation):
            register_secret(str(value))
        given.setdefault(key.section, {})[key.key] = value
    return config.replace(**given) if given else config
