"""Command-line flags declared on the settings they override.

A key carries its flag in its type, ``Annotated[Port, Flag("--port", help=...)]``: its name,
help and metavar, nothing else. The command builds the argparse options from the model
(:func:`flagged` lists them; the parsing of each value follows the key's type), so a flag
cannot drift from its key: its default is the key's default, its choices the key's, and a
given flag only overrides the key (flag > environment variable > file > default).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ragtrace_consumers.config._sources import sections_of

__all__ = ["Flag", "FlaggedKey", "flagged"]


@dataclass(frozen=True)
class Flag:
    """The flag of one key.

    ``help`` may name ``{default}`` (the key's default) and ``{stdin}`` (how a file flag
    reads standard input). ``switch``: a flag without a value that sets a boolean key to
    ``not default`` (``--no-web`` sets ``web.enabled`` false). ``reads_file``: the value is
    a file to read, ``-`` for standard input.
    """

    name: str
    help: str
    metavar: str | None = None
    switch: bool = False
    reads_file: bool = False

    def __post_init__(self) -> None:
        if not self.name.startswith("--"):
            raise ValueError(f"a flag's name starts with --, got {self.name!r}")

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments that holds the flag's value."""
        return self.name.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class FlaggedKey:
    """A key with a flag: ``section.key``, its field (type, default) and its flag."""

    section: str
    key: str
    field: FieldInfo
    flag: Flag


def flagged(settings_cls: type[BaseModel], sections: tuple[str, ...]) -> Iterator[FlaggedKey]:
    """The keys of ``sections`` (in that order, each in declaration order) that have a flag."""
    models = sections_of(settings_cls)
    for section in sections:
        for key, info in models[section].model_fields.items():
            for item in info.metadata:
                if isinstance(item, Flag):
                    yield FlaggedKey(section, key, info, item)
