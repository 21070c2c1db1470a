"""Configuration of ``ragtrace consume``: one documented YAML file plus environment variables.

Precedence per key: environment variable > file > default. The environment variable of key
``judge.concurrency`` is ``RAGTRACE_JUDGE_CONCURRENCY`` (``RAGTRACE_`` + section + ``_`` + key,
upper case); :func:`env_var` computes it. The file is found from the explicit ``path``, else
``$RAGTRACE_CONSUMER_CONFIG``, else defaults only. The documented example, every key commented,
ships as package data: ``consumers/ragtrace_consumers/ragtrace-consumer.yaml``.

A bad value in the file (or an unknown key) raises :class:`ConfigError` naming the file and the
key. A bad environment value logs a warning naming the variable and falls back to the file or
default value, as every environment setting in ragtrace does.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints
from urllib.parse import urlsplit, urlunsplit

from ragtrace.evaluation.judges.spec import DEFAULT_BUDGET_S, DEFAULT_TIMEOUT_S, JUDGE_NAMES
from ragtrace_consumers.assemble import DEFAULT_IDLE_S
from ragtrace_consumers.sample import SamplerConfig, SamplingRule, parse_rules

__all__ = [
    "ENV_CONFIG_FILE",
    "REDACTED",
    "AssemblySettings",
    "ConfigError",
    "ConsumerConfig",
    "ExportSettings",
    "HealthSettings",
    "JudgeSettings",
    "KafkaSettings",
    "MappingSettings",
    "RedisSettings",
    "SamplingSettings",
    "ScoringSettings",
    "env_var",
    "example_path",
    "load_config",
    "redact_url",
]

_log = logging.getLogger(__name__)

ENV_CONFIG_FILE = "RAGTRACE_CONSUMER_CONFIG"
"""Environment variable naming the configuration file when ``--config`` is not given."""


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the key (and file) at fault."""


def _positive(v: float) -> str | None:
    return None if v > 0 and math.isfinite(v) else "must be > 0"


def _non_negative(v: float) -> str | None:
    return None if v >= 0 and math.isfinite(v) else "must be >= 0"


def _unit(v: float) -> str | None:
    return None if 0.0 <= v <= 1.0 else "must be between 0 and 1"


def _non_empty(v: str) -> str | None:
    return None if v.strip() else "must be non-empty"


def _one_of(*choices: str) -> Callable[[str], str | None]:
    def check(v: str) -> str | None:
        return None if v in choices else f"must be one of {', '.join(choices)}"

    return check


def _url(v: str) -> str | None:
    return (
        None
        if v.startswith(("http://", "https://", "redis://", "rediss://", "unix://"))
        else "must be a URL"
    )


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _ascii(v: str) -> str | None:
    return None if v.isascii() else "must be ASCII"


def _key(
    check: Callable[[Any], str | None] | None = None,
    *,
    secret: bool = False,
    coerce: Callable[[object, str], object] | None = None,
) -> Any:
    return field(metadata={"check": check, "secret": secret, "coerce": coerce}, repr=not secret)


def _coerce_rules(raw: object, where: str) -> tuple[SamplingRule, ...]:
    """Sampling rules from the file (a YAML list) or the environment (JSON or YAML text)."""
    if isinstance(raw, str):
        import yaml

        try:
            raw = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{where}: not valid JSON or YAML: {exc}") from None
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
        raise ConfigError(f"{where}: expected a list of rules, got {type(raw).__name__}")
    if all(isinstance(r, SamplingRule) for r in raw):
        return tuple(raw)
    try:
        rules: tuple[SamplingRule, ...] = parse_rules(raw, where=where)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    return rules


def _rule_dict(rule: SamplingRule) -> dict[str, object]:
    out: dict[str, object] = {}
    if rule.name is not None:
        out["name"] = rule.name
    out["match"] = dict(rule.match)
    for key in ("recall_rate", "judge_rate"):
        if getattr(rule, key) is not None:
            out[key] = getattr(rule, key)
    return out


def _validate(obj: object, section: str) -> None:
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        check = f.metadata.get("check")
        if check is not None and value is not None:
            problem = check(value)
            if problem:
                raise ConfigError(f"{section}.{f.name}: {problem}, got {value!r}")


@dataclass(frozen=True)
class KafkaSettings:
    bootstrap_servers: str = _key(_non_empty)
    topic: str = _key(_non_empty)
    group_id: str = _key(_non_empty)
    dlq_topic: str = _key(_non_empty)
    auto_offset_reset: str = _key(_one_of("earliest", "latest"))
    commit_interval_s: float = _key(_positive)
    max_poll_records: int = _key(_positive)
    client_id: str = _key(_non_empty)
    session_timeout_ms: int = _key(_positive)
    drain_timeout_s: float = _key(_positive)
    security_protocol: str = _key(_one_of(*_PROTOCOLS))
    sasl_mechanism: str | None = _key(_one_of(*_SASL_MECHANISMS))
    sasl_username: str | None = _key(_non_empty)
    sasl_password: str | None = _key(secret=True)
    ssl_cafile: str | None = _key(_non_empty)
    ssl_certfile: str | None = _key(_non_empty)
    ssl_keyfile: str | None = _key(_non_empty)
    ssl_check_hostname: bool = _key()

    def __post_init__(self) -> None:
        _validate(self, "kafka")
        sasl = self.security_protocol.startswith("SASL_")
        tls = self.security_protocol.endswith("SSL")
        if sasl and self.sasl_mechanism is None:
            raise ConfigError(
                f"kafka.sasl_mechanism: required when kafka.security_protocol is "
                f"{self.security_protocol}"
            )
        if not sasl and self.sasl_mechanism is not None:
            raise ConfigError(
                f"kafka.sasl_mechanism: needs kafka.security_protocol SASL_SSL or "
                f"SASL_PLAINTEXT, got {self.security_protocol}"
            )
        for key in ("sasl_username", "sasl_password"):
            given = getattr(self, key) is not None
            if self.sasl_mechanism is not None and not given:
                raise ConfigError(
                    f"kafka.{key}: required with kafka.sasl_mechanism {self.sasl_mechanism}"
                )
            if self.sasl_mechanism is None and given:
                raise ConfigError(f"kafka.{key}: set but kafka.sasl_mechanism is not")
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            if getattr(self, key) is not None and not tls:
                raise ConfigError(
                    f"kafka.{key}: needs kafka.security_protocol SSL or SASL_SSL, "
                    f"got {self.security_protocol}"
                )
        if self.ssl_keyfile is not None and self.ssl_certfile is None:
            raise ConfigError(
                "kafka.ssl_keyfile: needs kafka.ssl_certfile (the client "
                "certificate the key belongs to)"
            )

    def client_options(self) -> dict[str, object]:
        """Security keyword arguments of kafka-python's ``KafkaConsumer``/``KafkaProducer``
        (parameter names as kafka-python spells them). Raises :class:`ConfigError` naming the key
        when a TLS file cannot be read, so a typo fails at start with a clear message."""
        options: dict[str, object] = {"security_protocol": self.security_protocol}
        if self.security_protocol.endswith("SSL"):
            options["ssl_check_hostname"] = self.ssl_check_hostname
            for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
                path = getattr(self, key)
                if path is None:
                    continue
                if not os.access(path, os.R_OK):
                    raise ConfigError(f"kafka.{key}: cannot read {path}")
                options[key] = path
        if self.sasl_mechanism is not None:
            options["sasl_mechanism"] = self.sasl_mechanism
            options["sasl_plain_username"] = self.sasl_username
            options["sasl_plain_password"] = self.sasl_password
        return options


@dataclass(frozen=True)
class RedisSettings:
    url: str = _key(_url)
    key_prefix: str = _key(_non_empty)

    def __post_init__(self) -> None:
        _validate(self, "redis")


@dataclass(frozen=True)
class ExportSettings:
    otlp_endpoint: str = _key(_url)
    service_name: str = _key(_non_empty)
    metrics_interval_s: float = _key(_positive)
    timeout_s: float = _key(_positive)
    metrics_otlp: bool = _key()

    def __post_init__(self) -> None:
        _validate(self, "export")


@dataclass(frozen=True)
class AssemblySettings:
    quiet_s: float = _key(_non_negative)
    lease_s: float = _key(_positive)
    claim_batch: int = _key(_positive)
    ttl_s: float = _key(_positive)
    max_attempts: int = _key(_positive)

    def __post_init__(self) -> None:
        _validate(self, "assembly")
        # A trace must outlive its wait for completion plus one lost lease (a replica that died
        # holding it), or it expires before another replica can score it.
        least = max(self.quiet_s, DEFAULT_IDLE_S) + self.lease_s
        if self.ttl_s <= least:
            raise ConfigError(
                f"assembly.ttl_s: must exceed the longest wait for completion "
                f"(max(assembly.quiet_s, {DEFAULT_IDLE_S:g})) plus assembly.lease_s "
                f"= {least:g}, got {self.ttl_s:g}"
            )


@dataclass(frozen=True)
class SamplingSettings:
    recall_rate: float = _key(_unit)
    judge_rate: float = _key(_unit)
    rules: tuple[SamplingRule, ...] = _key(coerce=_coerce_rules)
    salt: str = _key(_ascii)

    def __post_init__(self) -> None:
        _validate(self, "sampling")

    def sampler_config(self) -> SamplerConfig:
        """The :class:`~ragtrace_consumers.sample.Sampler` configuration of these settings."""
        return SamplerConfig(
            recall_rate=self.recall_rate,
            judge_rate=self.judge_rate,
            rules=self.rules,
            salt=self.salt,
        )


@dataclass(frozen=True)
class ScoringSettings:
    k: int = _key(_positive)
    recall_definition: str = _key(_one_of("mean_recall", "hit_rate"))
    recall_threshold: float = _key(_unit)
    groundedness_threshold: float = _key(_unit)

    def __post_init__(self) -> None:
        _validate(self, "scoring")


@dataclass(frozen=True)
class JudgeSettings:
    name: str = _key(_one_of(*JUDGE_NAMES))
    model: str | None = _key(_non_empty)
    concurrency: int = _key(_positive)
    timeout_s: float = _key(_positive)
    budget_s: float = _key(_positive)
    park_backoff_s: float = _key(_positive)
    park_backoff_max_s: float = _key(_positive)
    give_up_after_s: float = _key(_positive)
    calls_per_minute: int = _key(_positive)
    tokens_per_minute: int = _key(_positive)
    cache_ttl_s: int = _key(_positive)
    mode: str = _key(_one_of("realtime", "batch"))

    def __post_init__(self) -> None:
        _validate(self, "judge")
        if self.park_backoff_max_s < self.park_backoff_s:
            raise ConfigError("judge.park_backoff_max_s: must be >= judge.park_backoff_s")


def _port(v: int) -> str | None:
    return None if 0 <= v <= 65535 else "must be within 0..65535 (0: a free port)"


@dataclass(frozen=True)
class HealthSettings:
    enabled: bool = _key()
    host: str = _key(_non_empty)
    port: int = _key(_port)
    liveness_timeout_s: float = _key(_positive)
    startup_wait_s: float = _key(_non_negative)

    def __post_init__(self) -> None:
        _validate(self, "health")


def _mapping_spec(v: str) -> str | None:
    from ragtrace_consumers.readers.mapping import resolve

    try:
        resolve({}, v)
    except ValueError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class MappingSettings:
    """In-house span keys (see :mod:`ragtrace_consumers.readers.mapping`)."""

    role_attribute: str | None = _key(_non_empty)
    retrieval_value: str = _key(_non_empty)
    generation_value: str = _key(_non_empty)
    pipeline_value: str = _key(_non_empty)
    query: str | None = _key(_mapping_spec)
    documents: str | None = _key(_mapping_spec)
    chunk_ids: str | None = _key(_mapping_spec)
    chunk_texts: str | None = _key(_mapping_spec)
    chunk_scores: str | None = _key(_mapping_spec)
    answer: str | None = _key(_mapping_spec)
    metadata_id_keys: str = _key(_non_empty)

    def __post_init__(self) -> None:
        _validate(self, "mapping")

    def readers(self) -> Any:
        """The :class:`~ragtrace_consumers.readers.SpanReaders` these settings describe."""
        from ragtrace_consumers.readers import MappingRules, SpanReaders

        rules = MappingRules(
            role_attribute=self.role_attribute,
            retrieval_value=self.retrieval_value,
            generation_value=self.generation_value,
            pipeline_value=self.pipeline_value,
            query=self.query,
            documents=self.documents,
            chunk_ids=self.chunk_ids,
            chunk_texts=self.chunk_texts,
            chunk_scores=self.chunk_scores,
            answer=self.answer,
        )
        keys = tuple(k.strip() for k in self.metadata_id_keys.split(",") if k.strip())
        return SpanReaders.build(rules, keys)


_DEFAULTS: dict[str, dict[str, object]] = {
    "kafka": {
        "bootstrap_servers": "127.0.0.1:9092",
        "topic": "otlp_spans",
        "group_id": "ragtrace-consumer",
        "dlq_topic": "otlp_spans.dlq",
        "auto_offset_reset": "earliest",
        "commit_interval_s": 1.0,
        "max_poll_records": 500,
        "client_id": "ragtrace-consumer",
        "session_timeout_ms": 45000,
        "drain_timeout_s": 60.0,
        "security_protocol": "PLAINTEXT",
        "sasl_mechanism": None,
        "sasl_username": None,
        "sasl_password": None,
        "ssl_cafile": None,
        "ssl_certfile": None,
        "ssl_keyfile": None,
        "ssl_check_hostname": True,
    },
    "redis": {"url": "redis://127.0.0.1:6379/0", "key_prefix": "ragtrace"},
    "export": {
        "otlp_endpoint": "http://127.0.0.1:4328",
        "service_name": "ragtrace-consumer",
        "metrics_interval_s": 5.0,
        "timeout_s": 10.0,
        "metrics_otlp": True,
    },
    "assembly": {
        "quiet_s": 5.0,
        "lease_s": 300.0,
        "claim_batch": 64,
        "ttl_s": 3600.0,
        "max_attempts": 200,
    },
    "sampling": {"recall_rate": 1.0, "judge_rate": 1.0, "rules": (), "salt": ""},
    "scoring": {
        "k": 5,
        "recall_definition": "mean_recall",
        "recall_threshold": 0.5,
        "groundedness_threshold": 0.8,
    },
    "judge": {
        "name": "auto",
        "model": None,
        "concurrency": 8,
        "timeout_s": DEFAULT_TIMEOUT_S,
        "budget_s": DEFAULT_BUDGET_S,
        "park_backoff_s": 30.0,
        "park_backoff_max_s": 600.0,
        "give_up_after_s": 86400.0,
        "calls_per_minute": 600,
        "tokens_per_minute": 2_000_000,
        "cache_ttl_s": 604800,
        "mode": "realtime",
    },
    # Off locally (several replicas on one machine would contend for the port); the Helm chart
    # turns it on, on 0.0.0.0:8086, for the Kubernetes probes.
    "health": {
        "enabled": False,
        "host": "127.0.0.1",
        "port": 8086,
        "liveness_timeout_s": 120.0,
        "startup_wait_s": 60.0,
    },
    "mapping": {
        "role_attribute": None,
        "retrieval_value": "retrieval",
        "generation_value": "generation",
        "pipeline_value": "pipeline",
        "query": None,
        "documents": None,
        "chunk_ids": None,
        "chunk_texts": None,
        "chunk_scores": None,
        "answer": None,
        "metadata_id_keys": "id,doc_id,document_id,chunk_id,node_id,_id,uuid",
    },
}

_SECTIONS: dict[str, type] = {
    "kafka": KafkaSettings,
    "redis": RedisSettings,
    "export": ExportSettings,
    "assembly": AssemblySettings,
    "sampling": SamplingSettings,
    "scoring": ScoringSettings,
    "judge": JudgeSettings,
    "health": HealthSettings,
    "mapping": MappingSettings,
}


@dataclass(frozen=True)
class ConsumerConfig:
    """Every setting of one consumer replica; build it with :func:`load_config` or ``defaults()``."""

    kafka: KafkaSettings
    redis: RedisSettings
    export: ExportSettings
    assembly: AssemblySettings
    sampling: SamplingSettings
    scoring: ScoringSettings
    judge: JudgeSettings
    health: HealthSettings
    mapping: MappingSettings
    source: str = "defaults"

    def __post_init__(self) -> None:
        for name, cls in _SECTIONS.items():
            if not isinstance(getattr(self, name), cls):
                raise ConfigError(f"{name}: expected {cls.__name__}")

    @classmethod
    def defaults(cls) -> ConsumerConfig:
        return load_config(None, env={})

    def to_dict(self, *, redact: bool = True) -> dict[str, dict[str, object]]:
        """Every key by section as plain YAML-able data (what ``--print-config`` prints). With
        ``redact`` (the default) a secret key reads ``***`` and a URL's password is masked, so
        the output can be logged or pasted; it is then no longer a working configuration."""
        out: dict[str, dict[str, object]] = {}
        for name in _SECTIONS:
            settings = getattr(self, name)
            body: dict[str, object] = {}
            for f in dataclasses.fields(settings):
                value = getattr(settings, f.name)
                if f.name == "rules":
                    value = [_rule_dict(r) for r in value]
                if redact and value is not None:
                    if f.metadata.get("secret"):
                        value = REDACTED
                    elif isinstance(value, str) and "://" in value:
                        value = redact_url(value)
                body[f.name] = value
            out[name] = body
        return out

    def replace(self, **sections: Mapping[str, object]) -> ConsumerConfig:
        """A copy with some keys changed: ``cfg.replace(judge={"concurrency": 2})``."""
        changed: dict[str, object] = {}
        for name, values in sections.items():
            if name not in _SECTIONS:
                raise ConfigError(f"unknown section {name!r}")
            settings = getattr(self, name)
            current = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
            for key, raw in values.items():
                current[key] = _coerce(name, key, raw, f"{name}.{key}")
            changed[name] = _SECTIONS[name](**current)
        return dataclasses.replace(self, **changed)  # type: ignore[arg-type]


REDACTED = "***"
"""What a secret reads as in :meth:`ConsumerConfig.to_dict` output."""


def redact_url(url: str) -> str:
    """``url`` with the password of its user info and any ``password=`` query value masked."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + REDACTED
        netloc = f"{userinfo}@{host}"
    query = "&".join(
        f"{k}={REDACTED}" if k.lower() == "password" else (f"{k}={v}" if sep else k)
        for k, sep, v in (item.partition("=") for item in parts.query.split("&") if item)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def env_var(section: str, key: str) -> str:
    """The environment variable overriding ``section.key``."""
    return f"RAGTRACE_{section}_{key}".upper()


def example_path() -> Path:
    """The documented example configuration shipped with the package."""
    return Path(__file__).with_name("ragtrace-consumer.yaml")


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _coerce(section: str, key: str, raw: object, where: str) -> object:
    """``raw`` (a YAML scalar or an env string) as the field's type, or ConfigError."""
    hints = get_type_hints(_SECTIONS[section])
    if key not in hints:
        raise ConfigError(f"{where}: unknown key (known: {', '.join(_DEFAULTS[section])})")
    coerce = next(
        f.metadata.get("coerce") for f in dataclasses.fields(_SECTIONS[section]) if f.name == key
    )
    if coerce is not None:
        return coerce(raw, where)
    hint = str(hints[key])
    optional = "None" in hint
    if raw is None or (isinstance(raw, str) and optional and raw.strip().lower() in ("", "null")):
        if optional:
            return None
        raise ConfigError(f"{where}: a value is required")
    try:
        if "bool" in hint:
            text = str(raw).strip().lower()
            if isinstance(raw, bool):
                return raw
            if text in _TRUE or text in _FALSE:
                return text in _TRUE
            raise ValueError
        if "int" in hint:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            return int(str(raw).strip()) if isinstance(raw, str) else int(raw)  # type: ignore[call-overload]
        if "float" in hint:
            if isinstance(raw, bool):
                raise ValueError
            return float(raw)  # type: ignore[arg-type]
        if not isinstance(raw, (str, int, float)) or isinstance(raw, bool):
            raise ValueError
        return str(raw)
    except (TypeError, ValueError):
        kind = (
            "integer"
            if "int" in hint
            else "number"
            if "float" in hint
            else "boolean"
            if "bool" in hint
            else "string"
        )
        raise ConfigError(f"{where}: expected {kind}, got {raw!r}") from None


def _read_file(path: Path) -> dict[str, Any]:
    import yaml  # a consumer extra

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    return data


def load_config(
    path: str | Path | None = None, env: Mapping[str, str] | None = None
) -> ConsumerConfig:
    """Defaults, overlaid by the file, overlaid by environment variables; validated."""
    env = os.environ if env is None else env
    if path is None and env.get(ENV_CONFIG_FILE):
        path = env[ENV_CONFIG_FILE]
    values = {s: dict(d) for s, d in _DEFAULTS.items()}
    source = "defaults"
    if path is not None:
        path = Path(path)
        source = str(path)
        for section, body in _read_file(path).items():
            if section not in _SECTIONS:
                raise ConfigError(
                    f"{path}: {section}: unknown section (known: {', '.join(_SECTIONS)})"
                )
            if body is None:
                continue
            if not isinstance(body, dict):
                raise ConfigError(f"{path}: {section}: expected a mapping of keys")
            for key, raw in body.items():
                values[section][key] = _coerce(section, str(key), raw, f"{path}: {section}.{key}")
    file_values = {s: dict(d) for s, d in values.items()}
    for section, keys in _DEFAULTS.items():
        for key in keys:
            name = env_var(section, key)
            if name in env:
                try:
                    values[section][key] = _coerce(section, key, env[name], name)
                except ConfigError as exc:
                    _log.warning("ignoring %s (%s); using %r", name, exc, file_values[section][key])
    sections: dict[str, object] = {}
    for section, cls in _SECTIONS.items():
        try:
            sections[section] = cls(**values[section])
        except ConfigError as exc:
            # Find which layer supplied the bad value so the message points at it.
            bad_key = str(exc).split(":", 1)[0].split(".", 1)[-1]
            name = env_var(section, bad_key)
            if name in env and bad_key in values[section]:
                _log.warning("ignoring %s (%s); using %r", name, exc, file_values[section][bad_key])
                values[section][bad_key] = file_values[section][bad_key]
                try:
                    sections[section] = cls(**values[section])
                    continue
                except ConfigError as exc2:
                    exc = exc2
            raise ConfigError(f"{source}: {exc}") from None
    return ConsumerConfig(source=source, **sections)  # type: ignore[arg-type]
