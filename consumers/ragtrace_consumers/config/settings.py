"""Configuration of ``ragtrace consume`` and ``ragtrace serve``: one pydantic-settings model.

:class:`ConsumerConfig` is a ``BaseSettings`` of frozen sections (``kafka``, ``redis``, ...,
``mapping``). Each key is declared once, as a field of its section: its type and check (from
:mod:`._values`), its default and its description (the docstring under it). Its environment variable
is derived (:func:`env_var`: ``judge.concurrency`` is ``RAGTRACE_JUDGE_CONCURRENCY``); the
documented example file (``ragtrace-consumer.yaml`` beside this module), the consumer section of the
Helm chart's ``values.schema.json`` and the table in ``docs/configuration.md`` are generated from
``ConsumerConfig.model_json_schema()`` by :mod:`.docs` (a unit test fails when they drift).

Two settings sources (:mod:`._sources`) fill the model, merged key by key; precedence per key:

1. the environment variable ``RAGTRACE_<SECTION>_<KEY>``;
2. the YAML file: the explicit ``path``, else ``$RAGTRACE_CONSUMER_CONFIG``, else none;
3. the default.

Every bad value, from the file or from the environment, raises :class:`ConfigError` naming the key,
the value and where it came from (the file's path or the variable's name); so does an unknown key or
section in the file. Booleans read the words of :func:`ragtrace._config.parse_bool`. An unknown
``RAGTRACE_*`` variable logs a warning naming the closest known variable. Each value's origin is
kept (:meth:`ConsumerConfig.source_of`) and shown by ``--print-config``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from ragtrace.masking import mask_url
from ragtrace_consumers.config._sources import (
    DEFAULT_SOURCE,
    ENV_CONFIG_FILE,
    OTHER_ENV_VARS,
    EnvironmentSource,
    FileSource,
    env_var,
    key_error,
    with_sources,
)
from ragtrace_consumers.config._values import (
    REDACTED,
)
from ragtrace_consumers.config.sections import (
    AssemblySettings,
    AuditSettings,
    ExportSettings,
    HealthSettings,
    JudgeSettings,
    KafkaSettings,
    MappingSettings,
    RedactionSettings,
    RedisSettings,
    SamplingSettings,
    ScoringSettings,
    ServeSettings,
    WebSettings,
)
from ragtrace_consumers.errors import ConfigError
from ragtrace_consumers.scoring.sampling import SamplingRule

__all__ = [
    "DEFAULT_SOURCE",
    "ENV_CONFIG_FILE",
    "OTHER_ENV_VARS",
    "REDACTED",
    "SECTIONS",
    "AssemblySettings",
    "AuditSettings",
    "ConsumerConfig",
    "ExportSettings",
    "HealthSettings",
    "JudgeSettings",
    "KafkaSettings",
    "MappingSettings",
    "RedactionSettings",
    "WebSettings",
    "RedisSettings",
    "SamplingSettings",
    "ScoringSettings",
    "Secret",
    "ServeSettings",
    "env_var",
    "example_path",
    "load_config",
    "redact_url",
]

Secret = SecretStr
"""A credential's type (pydantic's): its text is only given by ``get_secret_value()``, never by
repr, str or ``--print-config``."""

_OVERRIDE = "override"

SECTIONS: Mapping[str, type[BaseModel]] = {
    "kafka": KafkaSettings,
    "redis": RedisSettings,
    "export": ExportSettings,
    "assembly": AssemblySettings,
    "sampling": SamplingSettings,
    "scoring": ScoringSettings,
    "judge": JudgeSettings,
    "health": HealthSettings,
    "mapping": MappingSettings,
    "redaction": RedactionSettings,
    "serve": ServeSettings,
    "web": WebSettings,
    "audit": AuditSettings,
}
"""Every section of the configuration by name, in the order of the file."""


def _plain(value: object, *, redact: bool) -> object:
    """A key's value as plain YAML-able data, masked when ``redact``."""
    if isinstance(value, SecretStr):
        return REDACTED if redact else value.get_secret_value()
    if isinstance(value, tuple):
        return [_rule_dict(r) if isinstance(r, SamplingRule) else r for r in value]
    if redact and isinstance(value, str) and "://" in value:
        return redact_url(value)
    return value


def _rule_dict(rule: SamplingRule) -> dict[str, object]:
    fields = {"name": rule.name, **dataclasses.asdict(rule)}
    return {key: value for key, value in fields.items() if value is not None}


class ConsumerConfig(BaseSettings):
    """Every setting of one consumer replica; build it with :func:`load_config` or ``defaults()``.

    ``source`` is the configuration file's path (``"defaults"`` without one); ``sources`` maps
    ``section.key`` to where its value came from: the file's path, ``"env NAME"`` or
    ``"override"`` (:meth:`replace`); keys not in it are defaults. Equality ignores ``sources``.
    """

    model_config = SettingsConfigDict(frozen=True, extra="forbid")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    export: ExportSettings = Field(default_factory=ExportSettings)
    assembly: AssemblySettings = Field(default_factory=AssemblySettings)
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    health: HealthSettings = Field(default_factory=HealthSettings)
    mapping: MappingSettings = Field(default_factory=MappingSettings)
    redaction: RedactionSettings = Field(default_factory=RedactionSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    source: str = "defaults"
    sources: Mapping[str, str] = Field(default_factory=dict, repr=False)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """``ConsumerConfig(**values)``: the values (not kept in ``sources``) > ``os.environ`` > the
        file ``$RAGTRACE_CONSUMER_CONFIG``. :func:`load_config` words errors by key and source."""
        path = os.environ.get(ENV_CONFIG_FILE)
        file = FileSource(settings_cls, Path(path) if path else None)
        return init_settings, EnvironmentSource(settings_cls, os.environ), file

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConsumerConfig):
            return NotImplemented
        return self.source == other.source and all(
            getattr(self, s) == getattr(other, s) for s in SECTIONS
        )

    @classmethod
    def defaults(cls) -> ConsumerConfig:
        return load_config(None, env={})

    def source_of(self, section: str, key: str) -> str:
        """Where ``section.key``'s value came from (see the class docstring)."""
        return self.sources.get(f"{section}.{key}", DEFAULT_SOURCE)

    def to_dict(self, *, redact: bool = True) -> dict[str, dict[str, object]]:
        """Every key by section as plain YAML-able data. With ``redact`` (the default) a secret
        key reads ``***`` and a URL's password is masked, so the output can be logged or pasted;
        it is then no longer a working configuration."""
        return {
            name: {key: _plain(value, redact=redact) for key, value in getattr(self, name)}
            for name in SECTIONS
        }

    def to_yaml(self) -> str:
        """What ``--print-config`` prints: every key, secrets masked, each value followed by a
        comment naming its source (default, the file's path, or the environment variable)."""
        lines = [
            f"# file: {self.source}",
            "# each value's source follows it: default, the file, env VARIABLE or override",
        ]
        for section, body in self.to_dict(redact=True).items():
            lines.append(f"{section}:")
            for key, value in body.items():
                text = yaml.safe_dump(value, default_flow_style=True, width=1_000_000)
                text = text.removesuffix("\n").removesuffix("\n...").strip()
                lines.append(f"  {key}: {text}  # {self.source_of(section, key)}")
        return "\n".join(lines) + "\n"

    def replace(self, **sections: Mapping[str, object]) -> ConsumerConfig:
        """A copy with some keys changed: ``cfg.replace(judge={"concurrency": 2})``."""
        changed: dict[str, object] = {}
        sources = dict(self.sources)
        for name, values in sections.items():
            if name not in SECTIONS:
                raise ConfigError(f"unknown section {name!r}")
            try:
                changed[name] = SECTIONS[name].model_validate(
                    {**dict(getattr(self, name)), **values}
                )
            except ValidationError as exc:
                raise ConfigError(key_error(exc, SECTIONS, name)) from None
            sources.update({f"{name}.{key}": _OVERRIDE for key in values})
        return self.model_copy(update={**changed, "sources": sources})


def load_config(
    path: str | Path | None = None, env: Mapping[str, str] | None = None
) -> ConsumerConfig:
    """Defaults, overlaid by the file, overlaid by environment variables (default: os.environ),
    merged key by key and then validated: a file value its variable overrides is never read.
    Raises :class:`ConfigError` naming the key, the value and its source (of several bad values,
    the first in the model's order)."""
    env = os.environ if env is None else env
    if path is None and env.get(ENV_CONFIG_FILE):
        path = env[ENV_CONFIG_FILE]
    file = FileSource(ConsumerConfig, None if path is None else Path(path))
    environ = EnvironmentSource(ConsumerConfig, env)
    data = file()
    for name, values in environ().items():  # sections and sources, key by key
        data[name] = {**data.get(name, {}), **values}
    try:
        return ConsumerConfig.model_validate(data)
    except ValidationError as exc:
        sources = {**file.sources, **environ.sources}
        raise ConfigError(
            with_sources(key_error(exc, SECTIONS), SECTIONS, sources, file.source)
        ) from None


def redact_url(url: str) -> str:
    """``url`` with its user-info password and secret-named query values masked
    (:func:`ragtrace.masking.mask_url`, the one masking function)."""
    return mask_url(url)


def example_path() -> Path:
    """The documented example configuration shipped with the package."""
    return Path(__file__).with_name("ragtrace-consumer.yaml")
