"""The configuration of ``ragtrace consume`` and ``ragtrace serve``, in one room.

- :mod:`.settings`: the pydantic-settings model (:class:`ConsumerConfig`) and :func:`load_config`,
  with the precedence environment variable > file > default;
- :mod:`.sections`: its sections, each key with its type, check, default and description;
- :mod:`._values`: the value types of its keys, each with its reader, check and JSON schema;
- :mod:`._sources`: the YAML file and ``RAGTRACE_*`` environment sources, and the wording of errors;
- :mod:`.flags`: the command-line flag a key may declare (``ragtrace serve``'s are generated from
  them);
- :mod:`.docs`: the files generated from ``ConsumerConfig.model_json_schema()`` (the example
  ``ragtrace-consumer.yaml`` beside this module, the chart's schema, docs/configuration.md).
"""

from __future__ import annotations

from ragtrace_consumers.config.settings import (
    DEFAULT_SOURCE,
    ENV_CONFIG_FILE,
    OTHER_ENV_VARS,
    REDACTED,
    SECTIONS,
    AssemblySettings,
    AuditSettings,
    ConsumerConfig,
    ExportSettings,
    HealthSettings,
    JudgeSettings,
    KafkaSettings,
    MappingSettings,
    RedactionSettings,
    RedisSettings,
    SamplingSettings,
    ScoringSettings,
    Secret,
    ServeSettings,
    WebSettings,
    env_var,
    example_path,
    load_config,
    redact_url,
)
from ragtrace_consumers.errors import ConfigError

__all__ = [
    "DEFAULT_SOURCE",
    "ENV_CONFIG_FILE",
    "OTHER_ENV_VARS",
    "REDACTED",
    "SECTIONS",
    "AssemblySettings",
    "AuditSettings",
    "ConfigError",
    "ConsumerConfig",
    "ExportSettings",
    "HealthSettings",
    "JudgeSettings",
    "KafkaSettings",
    "MappingSettings",
    "RedactionSettings",
    "RedisSettings",
    "SamplingSettings",
    "ScoringSettings",
    "Secret",
    "ServeSettings",
    "WebSettings",
    "env_var",
    "example_path",
    "load_config",
    "redact_url",
]
