"""The two settings sources of the consumer's configuration, and how an error names its source.

:class:`FileSource` reads the YAML file (its layout checked: a mapping of known sections, each a
mapping of keys); :class:`EnvironmentSource` reads ``RAGTRACE_<SECTION>_<KEY>`` variables (and a
deprecated name), and reports any other ``RAGTRACE_*`` variable with the closest known name. Each
source records where every key it sets came from (``sources``) and returns it with its values, so
the merge (pydantic-settings' in ``ConsumerConfig()``, :func:`load_config`'s) keeps each key's
provenance by the same precedence as its value.
:func:`key_error` and :func:`with_sources` turn a validation error into the message
:class:`ConfigError` carries: ``<file or environment variable>: section.key: problem, got value``.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, YamlConfigSettingsSource

from ragtrace._config import env_settings
from ragtrace.evaluation._input import is_stdin, read_input_text
from ragtrace_consumers.errors import ConfigError

__all__ = [
    "DEFAULT_SOURCE",
    "ENV_CONFIG_FILE",
    "ENV_SOURCE",
    "OTHER_ENV_VARS",
    "STDIN_SOURCE",
    "EnvironmentSource",
    "FileSource",
    "env_var",
    "key_error",
    "sections_of",
    "with_sources",
]

_log = logging.getLogger("ragtrace_consumers.config")

ENV_CONFIG_FILE = "RAGTRACE_CONSUMER_CONFIG"
"""Environment variable naming the configuration file when ``--config`` is not given."""

STDIN_SOURCE = "<stdin>"
"""How an error and ``--print-config`` name a configuration read from standard input (``-``)."""

DEFAULT_SOURCE = "default"
"""The source of a key that nobody set."""

ENV_SOURCE = "env "
"""How a key's source names the environment variable that set it: ``env RAGTRACE_SCORING_K``."""


_DEPRECATED_ENV = {"RAGTRACE_RECALL_DEFINITION": ("scoring", "recall_definition")}
"""Old variable names still read (with a warning) when the key's own variable is not set."""

OTHER_ENV_VARS: frozenset[str] = frozenset(
    {
        *(s.env for s in env_settings() if s.env),  # the SDK's
        # the evaluation core and the offline commands
        *("RAGTRACE_JUDGE_PRICES", "RAGTRACE_CALIBRATION_FILE", "RAGTRACE_LOG_FORMAT"),
        # the collector's configuration (collector/) and the chart's collector
        *("RAGTRACE_APP_OTLP_GRPC_ENDPOINT", "RAGTRACE_APP_OTLP_HTTP_ENDPOINT"),
        *("RAGTRACE_EVAL_OTLP_GRPC_ENDPOINT", "RAGTRACE_EVAL_OTLP_HTTP_ENDPOINT"),
        *("RAGTRACE_BATCH_MAX_SPANS", "RAGTRACE_BATCH_TIMEOUT", "RAGTRACE_COLLECTOR_LOG_LEVEL"),
        *("RAGTRACE_COLLECTOR_MEMORY_LIMIT_MIB", "RAGTRACE_COLLECTOR_MEMORY_SPIKE_MIB"),
        *("RAGTRACE_COLLECTOR_METRICS_HOST", "RAGTRACE_COLLECTOR_METRICS_PORT"),
        *("RAGTRACE_HEALTH_ENDPOINT", "RAGTRACE_KAFKA_MAX_MESSAGE_BYTES", "RAGTRACE_REDIS_SERVER"),
        *("RAGTRACE_PROMETHEUS_EXPORTER_ENDPOINT", "RAGTRACE_TRACE_BACKEND_ENDPOINT"),
    }
)
"""``RAGTRACE_*`` variables read by the parts of ragtrace that run beside the service: not reported
as unknown. (The development tooling's own variables are listed in scripts/README.md.)"""

_OTHER_ENV_PREFIXES = ("RAGTRACE_TRACE_BACKEND_HEADER_",)


_ENV_NAMES = {
    ("serve", "labels"): "RAGTRACE_LABELS",
    ("serve", "state"): "RAGTRACE_STATE",
    ("serve", "otlp_endpoint"): "RAGTRACE_EXPORT_OTLP_ENDPOINT",
}
"""Keys whose variable is not the derived name: the names ``ragtrace serve`` read before they were
keys (``serve.otlp_endpoint`` shares ``export.otlp_endpoint``'s)."""


def env_var(section: str, key: str) -> str:
    """The environment variable overriding ``section.key``."""
    return _ENV_NAMES.get((section, key)) or f"RAGTRACE_{section}_{key}".upper()


def sections_of(settings_cls: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The sections of a settings model: its fields whose type is a model, in order."""
    return {
        name: field.annotation
        for name, field in settings_cls.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
    }


class FileSource(YamlConfigSettingsSource):
    """The YAML file at ``path`` (None: no file; ``-``: standard input, named ``<stdin>``), its
    layout checked; it names itself as each key's source."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        self.path = path
        self.sections = sections_of(settings_cls)
        if path is None:
            self.source = "defaults"
        else:
            self.source = STDIN_SOURCE if is_stdin(path) else str(path)
        self.sources: dict[str, str] = {}
        super().__init__(settings_cls, yaml_file=path)

    def _read_files(self, files: object, deep_merge: bool = False) -> dict[str, Any]:
        # A missing file is an error here, not the base class's "no values".
        return {} if self.path is None else self._read_file(self.path)

    def _read_file(self, file_path: Path) -> dict[str, Any]:
        where = self.source
        try:
            data = yaml.safe_load(read_input_text(file_path))
        except OSError as exc:
            raise ConfigError(f"{where}: cannot read configuration: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where}: cannot read configuration: {exc}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{where}: not valid YAML: {exc}") from None
        if not isinstance(data, (dict, type(None))):
            raise ConfigError(f"{where}: expected a mapping of sections at the top level")
        out: dict[str, Any] = {}
        for section, body in (data or {}).items():
            if section not in self.sections:
                raise ConfigError(
                    f"{where}: {section}: unknown section (known: {', '.join(self.sections)})"
                    f"{_closest(str(section), self.sections)}"
                )
            if not isinstance(body, (dict, type(None))):
                raise ConfigError(f"{where}: {section}: expected a mapping of keys")
            if body:
                out[section] = body
                self.sources.update({f"{section}.{key}": self.source for key in body})
        return out

    def __call__(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        return {**super().__call__(), "source": self.source, "sources": self.sources}


class EnvironmentSource(PydanticBaseSettingsSource):
    """The ``RAGTRACE_<SECTION>_<KEY>`` variables of ``env`` (a deprecated name when the key's own
    is not set); any other ``RAGTRACE_*`` variable is reported with the closest known name."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.values: dict[str, dict[str, str]] = {}
        self.sources: dict[str, str] = {}
        known = {ENV_CONFIG_FILE, *_DEPRECATED_ENV}
        old_names = {key: old for old, key in _DEPRECATED_ENV.items()}
        for section, cls in sections_of(settings_cls).items():
            for key in cls.model_fields:
                name = env_var(section, key)
                known.add(name)
                old = old_names.get((section, key))
                if name not in env and old is not None and old in env:
                    _log.warning("%s is deprecated: set %s instead", old, name)
                    name = old
                if name in env:
                    self.values.setdefault(section, {})[key] = env[name]
                    self.sources[f"{section}.{key}"] = ENV_SOURCE + name
        for name in sorted(env):
            if not name.startswith("RAGTRACE_") or name in known or name in OTHER_ENV_VARS:
                continue
            if not name.startswith(_OTHER_ENV_PREFIXES):
                hint = _closest(name, known) or " (see docs/configuration.md for every variable)"
                _log.warning("unknown environment variable %s is ignored%s", name, hint)

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads every key at once

    def __call__(self) -> dict[str, Any]:
        return {**self.values, "sources": self.sources}


# --- error messages ----------------------------------------------------------------------------


def key_error(
    exc: ValidationError, sections: Mapping[str, type[BaseModel]], section: str | None = None
) -> str:
    """The first error of ``exc`` as ``section.key: problem`` (``section``: the model's, when
    ``exc`` is a section's)."""
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"]]
    loc = [section, *loc] if section else loc
    if len(loc) < 2:  # a check across keys: its message names them
        return error["msg"]
    dotted = f"{loc[0]}.{loc[1]}"
    if error["type"] == "extra_forbidden":
        known = list(sections[loc[0]].model_fields)
        return f"{dotted}: unknown key (known: {', '.join(known)}){_closest(loc[1], known)}"
    problem = str(error["msg"])
    return f"{dotted}{'' if problem.startswith('[') else ': '}{problem}"


def with_sources(
    message: str, sections: Iterable[str], sources: Mapping[str, str], file: str
) -> str:
    """``message`` prefixed by the source of the key it names first, with the sources of any
    other keys it names (a check across keys) appended."""
    mentioned = list(dict.fromkeys(re.findall(r"\b[a-z]+\.[a-z_]+\b", message)))
    mentioned = [m for m in mentioned if m.split(".")[0] in set(sections)]
    set_by = [sources[m] for m in mentioned if m in sources]
    prefix = _describe(set_by[0]) if set_by else file
    if len(mentioned) > 1:
        named = "; ".join(
            f"{m} from {_describe(sources.get(m, DEFAULT_SOURCE))}" for m in mentioned
        )
        message = f"{message} ({named})"
    return f"{prefix}: {message}"


def _describe(source: str) -> str:
    """A source as an error message names it."""
    if source.startswith(ENV_SOURCE):
        return f"environment variable {source[len(ENV_SOURCE) :]}"
    return source


def _closest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""
