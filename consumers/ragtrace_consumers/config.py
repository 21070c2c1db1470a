"""Configuration of ``ragtrace consume`` and ``ragtrace serve``: one pydantic-settings model.

:class:`ConsumerConfig` is a ``BaseSettings`` of nine frozen sections (``kafka``, ``redis``, ...,
``mapping``). Each key is declared once, as a field of its section: its type and check, its default
and its description (the docstring under it). Its environment variable is derived
(:func:`env_var`: ``judge.concurrency`` is ``RAGTRACE_JUDGE_CONCURRENCY``); the documented example
file (package data ``ragtrace-consumer.yaml``), the consumer section of the Helm chart's
``values.schema.json`` and the table in ``docs/configuration.md`` are generated from
``ConsumerConfig.model_json_schema()`` by :mod:`ragtrace_consumers.config_docs` (a unit test fails
when they drift).

Two settings sources fill the model, merged key by key; precedence per key:

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
import difflib
import logging
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainValidator,
    SecretStr,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError, core_schema
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from ragtrace._config import env_settings, parse_bool
from ragtrace.errors import RagtraceError
from ragtrace.evaluation.judges.spec import DEFAULT_BUDGET_S, DEFAULT_TIMEOUT_S, JUDGE_NAMES
from ragtrace_consumers.assemble import DEFAULT_IDLE_S
from ragtrace_consumers.sample import SamplerConfig, SamplingRule, parse_rules

__all__ = [
    "DEFAULT_SOURCE",
    "ENV_CONFIG_FILE",
    "OTHER_ENV_VARS",
    "REDACTED",
    "SECTIONS",
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
    "Secret",
    "env_var",
    "example_path",
    "load_config",
    "redact_url",
]

_log = logging.getLogger(__name__)

ENV_CONFIG_FILE = "RAGTRACE_CONSUMER_CONFIG"
"""Environment variable naming the configuration file when ``--config`` is not given."""

DEFAULT_SOURCE = "default"
"""What :meth:`ConsumerConfig.source_of` says of a key that nobody set."""

REDACTED = "***"
"""What a secret reads as in :meth:`ConsumerConfig.to_dict` output."""


class ConfigError(RagtraceError, ValueError):
    """A configuration value is invalid; the message names the key, the value and its source."""


Secret = SecretStr
"""A credential's type (pydantic's): its text is only given by ``get_secret_value()``, never by
repr, str or ``--print-config``."""


# --- value types: the file's and the environment's words read as each type, then one check ----


def _fail(message: str) -> PydanticCustomError:
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
            raise _fail("a value is required")
        value: object = None
        if isinstance(raw, (bool, SecretStr)):
            value = raw if kind in (bool, SecretStr) and isinstance(raw, kind) else None
        elif isinstance(raw, (str, int, float)) and (kind is not bool or isinstance(raw, str)):
            value = parse(raw)
        if value is None:
            raise _fail(f"expected {word}, got {REDACTED if kind is SecretStr else repr(raw)}")
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
            raise _fail(f"{problem}, got {value!r}")
        return value


def _rule(test: Callable[[Any], bool], problem: str, **schema: Any) -> _Check:
    return _Check(lambda v: None if test(v) else problem, schema)


def _one_of(*choices: str) -> _Check:
    return _rule(lambda v: v in choices, f"must be one of {', '.join(choices)}", enum=list(choices))


def _mapping_spec(spec: str) -> str | None:
    from ragtrace_consumers.readers.mapping import resolve

    try:
        resolve({}, spec)
    except ValueError as exc:
        return str(exc)
    return None


def _to_rules(raw: object) -> tuple[SamplingRule, ...]:
    """Sampling rules from the file (a YAML list) or the environment (JSON or YAML text)."""
    if isinstance(raw, str):
        try:
            raw = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise _fail(f"not valid JSON or YAML: {exc}") from None
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
        raise _fail(f"expected a list of rules, got {type(raw).__name__}")
    if all(isinstance(r, SamplingRule) for r in raw):
        return tuple(raw)
    try:
        return parse_rules(raw, where="")
    except (TypeError, ValueError) as exc:
        raise _fail(str(exc)) from None


_positive = _rule(lambda v: v > 0 and math.isfinite(v), "must be > 0", exclusiveMinimum=0)
_URL_SCHEMES = ("http", "https", "redis", "rediss", "unix")
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
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

_Bool = Annotated[bool, _read(bool)]
_Int = Annotated[int, _read(int)]
_Float = Annotated[float, _read(float)]
_Str = Annotated[str, _read(str)]
_OptStr = Annotated[str | None, _read(str, optional=True)]
_Secret = Annotated[SecretStr | None, _read(SecretStr, optional=True)]
_Positive = Annotated[_Float, _positive]
_PositiveInt = Annotated[_Int, _Check(_positive.problem, {"minimum": 1})]
_NonNegative = Annotated[
    _Float, _rule(lambda v: v >= 0 and math.isfinite(v), "must be >= 0", minimum=0)
]
_Rate = Annotated[
    _Float, _rule(lambda v: 0.0 <= v <= 1.0, "must be between 0 and 1", minimum=0, maximum=1)
]
_Port = Annotated[
    _Int,
    _rule(
        lambda v: 0 <= v <= 65535,
        "must be within 0..65535 (0: a free port)",
        minimum=0,
        maximum=65535,
    ),
]
_non_empty = _rule(lambda v: bool(v.strip()), "must be non-empty", minLength=1)
_NonEmpty = Annotated[_Str, _non_empty]
_OptNonEmpty = Annotated[_OptStr, _non_empty]
_Ascii = Annotated[_Str, _rule(str.isascii, "must be ASCII", pattern="^[\\x00-\\x7F]*$")]
_Url = Annotated[
    _Str,
    _rule(
        lambda v: v.startswith(tuple(f"{s}://" for s in _URL_SCHEMES)),
        "must be a URL",
        pattern=f"^({'|'.join(_URL_SCHEMES)})://",
    ),
]
_Spec = Annotated[_OptStr, _Check(_mapping_spec, {})]
_Rules = Annotated[
    tuple[SamplingRule, ...], PlainValidator(_to_rules), WithJsonSchema(_RULE_SCHEMA)
]


class _Section(BaseModel):
    """One section of the file: frozen, unknown keys refused, each docstring its key's description."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


# --- the sections ------------------------------------------------------------------------------
class KafkaSettings(_Section):
    bootstrap_servers: _NonEmpty = "127.0.0.1:9092"
    """Kafka brokers, comma-separated host:port list."""
    topic: _NonEmpty = "otlp_spans"
    """Topic the collector's kafka exporter writes spans to (otlp_proto, partitioned by trace ID)."""
    group_id: _NonEmpty = "ragtrace-consumer"
    """Consumer group: every replica uses the same group; scale out with replicas and partitions."""
    dlq_topic: _NonEmpty = "otlp_spans.dlq"
    """Dead-letter topic for messages that cannot be decoded (the reason is in the headers)."""
    auto_offset_reset: Annotated[_Str, _one_of("earliest", "latest")] = "earliest"
    """Where a new consumer group starts reading: earliest or latest."""
    commit_interval_s: _Positive = 1.0
    """Seconds between offset commits (only offsets whose spans are already stored are committed)."""
    max_poll_records: _PositiveInt = 500
    """Most messages handed over by one poll."""
    client_id: _NonEmpty = "ragtrace-consumer"
    """Kafka client ID prefix (the process ID is appended)."""
    session_timeout_ms: _PositiveInt = 45_000
    """Milliseconds without a heartbeat after which a replica counts as dead and its partitions
    move to the others (the broker's group.min/max.session.timeout.ms bound it)."""
    drain_timeout_s: _Positive = 60.0
    """On SIGTERM: seconds to let traces being scored finish before offsets are committed and the
    consumer leaves the group (unfinished ones are retried by another replica after their lease)."""
    security_protocol: Annotated[_Str, _one_of(*_PROTOCOLS)] = "PLAINTEXT"
    """How the consumer and the dead-letter producer talk to the brokers: PLAINTEXT, SSL (TLS),
    SASL_PLAINTEXT (SASL without TLS) or SASL_SSL (SASL over TLS)."""
    sasl_mechanism: Annotated[_OptStr, _one_of(*_SASL_MECHANISMS)] = None
    """SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; required with a SASL_* protocol, and
    then sasl_username and sasl_password are required too."""
    sasl_username: _OptNonEmpty = None
    """SASL user name."""
    sasl_password: _Secret = None
    """SASL password: set it with RAGTRACE_KAFKA_SASL_PASSWORD rather than here (it is a secret)."""
    ssl_cafile: _OptNonEmpty = None
    """CA certificate (PEM file) the brokers' certificates are verified against (SSL, SASL_SSL);
    null: the system's trusted CAs."""
    ssl_certfile: _OptNonEmpty = None
    """Client certificate (PEM file) for mutual TLS; it may hold the private key too."""
    ssl_keyfile: _OptNonEmpty = None
    """Private key (PEM file) of ssl_certfile, when it is a separate file."""
    ssl_check_hostname: _Bool = True
    """Check that a broker's certificate names the host connected to (false: testing only)."""

    @model_validator(mode="after")
    def _security_keys_agree(self) -> KafkaSettings:
        protocol, mechanism = self.security_protocol, self.sasl_mechanism
        if protocol.startswith("SASL_") and mechanism is None:
            raise _fail(
                f"kafka.sasl_mechanism: required when kafka.security_protocol is {protocol}"
            )
        if not protocol.startswith("SASL_") and mechanism is not None:
            raise _fail(
                "kafka.sasl_mechanism: needs kafka.security_protocol SASL_SSL or "
                f"SASL_PLAINTEXT, got {protocol}"
            )
        for key in ("sasl_username", "sasl_password"):
            given = getattr(self, key) is not None
            if mechanism is not None and not given:
                raise _fail(f"kafka.{key}: required with kafka.sasl_mechanism {mechanism}")
            if mechanism is None and given:
                raise _fail(f"kafka.{key}: set but kafka.sasl_mechanism is not")
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            if getattr(self, key) is not None and not protocol.endswith("SSL"):
                raise _fail(
                    f"kafka.{key}: needs kafka.security_protocol SSL or SASL_SSL, got {protocol}"
                )
        if self.ssl_keyfile is not None and self.ssl_certfile is None:
            raise _fail(
                "kafka.ssl_keyfile: needs kafka.ssl_certfile (the client "
                "certificate the key belongs to)"
            )
        return self

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
            password = self.sasl_password
            options["sasl_plain_password"] = (
                None if password is None else password.get_secret_value()
            )
        return options


class RedisSettings(_Section):
    url: _Url = "redis://127.0.0.1:6379/0"
    """Redis holding traces being assembled, labels, the judge cache and the idempotency keys."""
    key_prefix: _NonEmpty = "ragtrace"
    """Prefix of every Redis key ragtrace writes; replicas of one deployment share it."""


class ExportSettings(_Section):
    otlp_endpoint: _Url = "http://127.0.0.1:4328"
    """Base URL of the collector's evaluation OTLP/HTTP receiver (/v1/traces and /v1/metrics are
    appended). Evaluation spans and metrics go here, never into the span topic."""
    service_name: _NonEmpty = "ragtrace-consumer"
    """service.name of the evaluation spans and metrics this consumer emits."""
    metrics_interval_s: _Positive = 5.0
    """Seconds between metric exports."""
    timeout_s: _Positive = 10.0
    """Seconds one OTLP export may take before it counts as failed (and the trace is retried)."""
    metrics_otlp: _Bool = True
    """Push metrics to otlp_endpoint every metrics_interval_s. The health server (health.enabled)
    serves them on GET /metrics either way; set false when Prometheus scrapes that directly, so
    nothing is counted twice (the Helm chart does)."""


class AssemblySettings(_Section):
    quiet_s: _NonNegative = 5.0
    """A trace is complete (and scored) this many seconds after its generation span arrived: the
    quiet period lets spans exported later (by other services, or in a later batch) catch up. A
    trace's root span makes it complete at once; a trace that shows neither a root nor a
    generation span is scored max(quiet_s, 60) seconds after its first span arrived."""
    lease_s: _Positive = 300.0
    """Seconds a replica holds a claimed trace; if it dies, another replica scores it after this.
    Must exceed the longest scoring (judge retries included)."""
    claim_batch: _PositiveInt = 64
    """Most due traces claimed at once."""
    ttl_s: _Positive = 3600.0
    """Seconds a trace's spans are kept after its last span arrived (a parked trace's, after its
    next retry time): an abandoned trace expires then. Must exceed max(quiet_s, 60) + lease_s."""
    max_attempts: _PositiveInt = 200
    """Parks (judge unavailable or failing, write-back failed) after which a trace is given up and
    kept for inspection in the dead set instead of being retried again."""

    @model_validator(mode="after")
    def _outlives_a_lost_lease(self) -> AssemblySettings:
        # A trace must outlive its wait for completion plus one lost lease (a replica that died
        # holding it), or it expires before another replica can score it.
        least = max(self.quiet_s, DEFAULT_IDLE_S) + self.lease_s
        if self.ttl_s <= least:
            raise _fail(
                f"assembly.ttl_s: must exceed the longest wait for completion "
                f"(max(assembly.quiet_s, {DEFAULT_IDLE_S:g})) plus assembly.lease_s "
                f"= {least:g}, got {self.ttl_s:g}"
            )
        return self


class SamplingSettings(_Section):
    recall_rate: _Rate = 1.0
    """Share of traces scored for recall (labelled questions only), 0 to 1. Sampling is
    deterministic by trace ID, so every replica makes the same choice, and the judged traces are
    a subset of the recall-scored ones whenever judge_rate <= recall_rate."""
    judge_rate: _Rate = 1.0
    """Share of traces sent to the groundedness judge, 0 to 1."""
    rules: _Rules = ()
    """Per-route rates: a list of rules tried in order; the first whose every pattern matches sets
    the rates of a trace (a rate it leaves out keeps the default above). Each rule:
      name: a label for logs (optional)
      match: {key: glob, ...} with keys service, pipeline, model or any attribute of the trace's
             pipeline span (http.route, tenant, ...); shell-style globs, case-sensitive; a key
             the trace lacks never matches
      recall_rate, judge_rate: 0 to 1 (optional)
    e.g.  rules:
            - name: checkout-judged-lightly
              match: {service: "checkout", http.route: "/api/ask*"}
              judge_rate: 0.1
    RAGTRACE_SAMPLING_RULES takes the same list as JSON."""
    salt: _Ascii = ""
    """Mixed into the trace-ID hash: change it to sample a different set of traces at the same
    rates (ASCII; every replica must use the same salt)."""

    def sampler_config(self) -> SamplerConfig:
        """The :class:`~ragtrace_consumers.sample.Sampler` configuration of these settings."""
        return SamplerConfig(
            recall_rate=self.recall_rate,
            judge_rate=self.judge_rate,
            rules=self.rules,
            salt=self.salt,
        )


class ScoringSettings(_Section):
    k: _PositiveInt = 5
    """Cut-off of recall@k, precision@k and nDCG@k."""
    recall_definition: Annotated[_Str, _one_of("mean_recall", "hit_rate")] = "mean_recall"
    """Recall definition used for the attribution cell: mean_recall or hit_rate."""
    recall_threshold: _Rate = 0.5
    """A recall below this fails retrieval (attribution cell)."""
    groundedness_threshold: _Rate = 0.8
    """A groundedness below this fails generation (attribution cell)."""


class JudgeSettings(_Section):
    name: Annotated[_Str, _one_of(*JUDGE_NAMES)] = "auto"
    """Groundedness judge: anthropic, lexical (model-free), or auto (anthropic when
    ANTHROPIC_API_KEY is set, else lexical)."""
    model: _OptNonEmpty = None
    """Judge model ID; null uses the judge's default (RAGTRACE_JUDGE_MODEL also sets it)."""
    concurrency: _PositiveInt = 8
    """Judge calls in flight at once; when all are busy the consumer stops reading Kafka. The
    lexical judge answers in process instead (up to 512 traces in flight, no judge threads)."""
    timeout_s: _Positive = DEFAULT_TIMEOUT_S
    """Seconds one judge request may take (capped by what is left of judge.budget_s)."""
    budget_s: _Positive = DEFAULT_BUDGET_S
    """Total seconds one judgement may take, every request and retry wait included (the one
    retry owner honours retry-after within it); past it the trace is parked. The start-up
    check refuses an assembly.lease_s that a full round of judgements could outlast."""
    park_backoff_s: _Positive = 30.0
    """Seconds a parked trace waits before its first retry; grows with the trace's age."""
    park_backoff_max_s: _Positive = 600.0
    """Longest wait between retries of a parked trace."""
    give_up_after_s: _Positive = 86400.0
    """A trace still unjudged this many seconds after it ended is written without groundedness."""
    calls_per_minute: _PositiveInt = 600
    """Judge calls per minute across all replicas (shared budget in Redis); over it, traces are
    scored without groundedness and counted as budget-exhausted."""
    tokens_per_minute: _PositiveInt = 2_000_000
    """Judge tokens per minute across all replicas (estimated before the call)."""
    cache_ttl_s: _PositiveInt = 604_800
    """Seconds a judge result stays cached (same answer, context, model and prompt cost nothing)."""
    mode: Annotated[_Str, _one_of("realtime", "batch")] = "realtime"
    """realtime: one Messages API call per judgement, scored within seconds. batch: judgements go
    through the Message Batches API at half the price; a trace waits parked until its batch has
    ended (usually minutes, at most 24 hours). Batch mode needs the anthropic judge."""

    @model_validator(mode="after")
    def _backoff_bounded(self) -> JudgeSettings:
        if self.park_backoff_max_s < self.park_backoff_s:
            raise _fail("judge.park_backoff_max_s: must be >= judge.park_backoff_s")
        return self


class HealthSettings(_Section):
    enabled: _Bool = False
    """Serve /livez and /readyz for Kubernetes probes. /livez fails when the consume loop has made no
    progress for liveness_timeout_s; /readyz fails while Redis does not answer or the consumer has
    neither a partition assignment nor a broker connection (and while draining after SIGTERM).
    Off by default when run by hand; the Helm chart turns it on."""
    host: _NonEmpty = "127.0.0.1"
    """Address the health endpoints listen on (0.0.0.0 in a container, so the kubelet reaches them)."""
    port: _Port = 8086
    """Port of the health endpoints (0: a free port, logged at start)."""
    liveness_timeout_s: _Positive = 120.0
    """Seconds without progress of the consume loop after which /livez fails (it makes progress
    several times a second when healthy, even when idle or backpressured)."""
    startup_wait_s: _NonNegative = 60.0
    """Seconds start-up waits for Redis and the Kafka brokers to answer; past it, `ragtrace consume`
    exits (status 1) with one line naming the dependency and its address. Once running, an
    outage never stops the consumer: every call is retried with backoff and /readyz says which
    dependency is down (docs/reliability.md)."""


class MappingSettings(_Section):
    """In-house span keys (see :mod:`ragtrace_consumers.readers.mapping`)."""

    role_attribute: _OptNonEmpty = None
    """In-house spans, scored without code: the attribute whose value names a span's role (null: no
    mapping; the known dialects are read either way). Each key below is an attribute key,
    optionally with a JSON path into its JSON value: "app.rag.result:$.hits[*].doc_key"."""
    retrieval_value: _NonEmpty = "retrieval"
    """Value of role_attribute on a retrieval span."""
    generation_value: _NonEmpty = "generation"
    """Value of role_attribute on a generation span."""
    pipeline_value: _NonEmpty = "pipeline"
    """Value of role_attribute on the request (pipeline) span."""
    query: _Spec = None
    """Where the query text is."""
    documents: _Spec = None
    """Where a JSON list of documents is (read like every dialect's: ID field, metadata, text)."""
    chunk_ids: _Spec = None
    """Where the ranked chunk IDs are (a list attribute, or a JSON path ending in [*])."""
    chunk_texts: _Spec = None
    """Where the chunk texts are (parallel to chunk_ids)."""
    chunk_scores: _Spec = None
    """Where the chunk scores are (parallel to chunk_ids)."""
    answer: _Spec = None
    """Where the answer is (JSON envelopes are unwrapped)."""
    metadata_id_keys: _NonEmpty = "id,doc_id,document_id,chunk_id,node_id,_id,uuid"
    """Document-metadata keys tried, in order, for a chunk's ID in every dialect (comma-separated);
    then source+position, and only then a content hash (recall n/a)."""

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


SECTIONS: Mapping[str, type[_Section]] = {
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
"""Every section of the configuration by name, in the order of the file."""

_DEPRECATED_ENV = {"RAGTRACE_RECALL_DEFINITION": ("scoring", "recall_definition")}
"""Old variable names still read (with a warning) when the key's own variable is not set."""

OTHER_ENV_VARS: frozenset[str] = frozenset(
    {
        *(s.env for s in env_settings() if s.env),  # the SDK's
        # the evaluation core and the offline commands; ragtrace serve
        *("RAGTRACE_JUDGE_PRICES", "RAGTRACE_CALIBRATION_FILE", "RAGTRACE_LOG_FORMAT"),
        *("RAGTRACE_STATE", "RAGTRACE_LABELS"),
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
_OVERRIDE = "override"
_ENV_SOURCE = "env "


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
        """``ConsumerConfig(**values)``: the values > ``os.environ`` > ``$RAGTRACE_CONSUMER_CONFIG``
        (:func:`load_config` names the file and the environment, and words errors by key)."""
        path = os.environ.get(ENV_CONFIG_FILE)
        file = _File(settings_cls, Path(path) if path else None)
        return init_settings, _Environment(settings_cls, os.environ), file

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
                raise ConfigError(_message(exc, name)) from None
            sources.update({f"{name}.{key}": _OVERRIDE for key in values})
        return self.model_copy(update={**changed, "sources": sources})


# --- the two sources: the file and the environment ---------------------------------------------


class _File(YamlConfigSettingsSource):
    """The YAML file at ``path`` (None: no file), its layout checked; it names itself as each
    key's source."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        self.path = path
        self.source = "defaults" if path is None else str(path)
        self.sources: dict[str, str] = {}
        super().__init__(settings_cls, yaml_file=path)

    def _read_files(self, files: object, deep_merge: bool = False) -> dict[str, Any]:
        # A missing file is an error here, not the base class's "no values".
        return {} if self.path is None else self._read_file(self.path)

    def _read_file(self, file_path: Path) -> dict[str, Any]:
        try:
            data = yaml.safe_load(file_path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{file_path}: cannot read configuration: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{file_path}: not valid YAML: {exc}") from None
        if not isinstance(data, (dict, type(None))):
            raise ConfigError(f"{file_path}: expected a mapping of sections at the top level")
        out: dict[str, Any] = {}
        for section, body in (data or {}).items():
            if section not in SECTIONS:
                raise ConfigError(
                    f"{file_path}: {section}: unknown section (known: {', '.join(SECTIONS)})"
                    f"{_closest(str(section), SECTIONS)}"
                )
            if not isinstance(body, (dict, type(None))):
                raise ConfigError(f"{file_path}: {section}: expected a mapping of keys")
            if body:
                out[section] = body
                self.sources.update({f"{section}.{key}": self.source for key in body})
        return out

    def __call__(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        return {**super().__call__(), "source": self.source, "sources": self.sources}


class _Environment(PydanticBaseSettingsSource):
    """The ``RAGTRACE_<SECTION>_<KEY>`` variables of ``env`` (a deprecated name when the key's own
    is not set); any other ``RAGTRACE_*`` variable is reported with the closest known name."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.values: dict[str, dict[str, str]] = {}
        self.sources: dict[str, str] = {}
        known = {ENV_CONFIG_FILE, *_DEPRECATED_ENV}
        old_names = {key: old for old, key in _DEPRECATED_ENV.items()}
        for section, cls in SECTIONS.items():
            for key in cls.model_fields:
                name = env_var(section, key)
                known.add(name)
                old = old_names.get((section, key))
                if name not in env and old is not None and old in env:
                    _log.warning("%s is deprecated: set %s instead", old, name)
                    name = old
                if name in env:
                    self.values.setdefault(section, {})[key] = env[name]
                    self.sources[f"{section}.{key}"] = _ENV_SOURCE + name
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


def load_config(
    path: str | Path | None = None, env: Mapping[str, str] | None = None
) -> ConsumerConfig:
    """Defaults, overlaid by the file, overlaid by environment variables (default: os.environ);
    validated. Raises :class:`ConfigError` naming the key, the value and its source."""
    env = os.environ if env is None else env
    if path is None and env.get(ENV_CONFIG_FILE):
        path = env[ENV_CONFIG_FILE]
    file = _File(ConsumerConfig, None if path is None else Path(path))
    environ = _Environment(ConsumerConfig, env)
    try:
        # (a BaseSettings parameter the dataclass transform does not show to the type checker)
        return ConsumerConfig(_build_sources=((environ, file), {}))  # type: ignore[call-arg]
    except ValidationError as exc:
        sources = {**file.sources, **environ.sources}
        raise ConfigError(_name_sources(_message(exc), sources, file.source)) from None


# --- error messages ----------------------------------------------------------------------------


def _message(exc: ValidationError, section: str | None = None) -> str:
    """The first error of ``exc`` as ``section.key: problem`` (``section``: the model's, when
    ``exc`` is a section's)."""
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"]]
    loc = [section, *loc] if section else loc
    if len(loc) < 2:  # a check across keys: its message names them
        return error["msg"]
    dotted = f"{loc[0]}.{loc[1]}"
    if error["type"] == "extra_forbidden":
        known = list(SECTIONS[loc[0]].model_fields)
        return f"{dotted}: unknown key (known: {', '.join(known)}){_closest(loc[1], known)}"
    problem = str(error["msg"])
    return f"{dotted}{'' if problem.startswith('[') else ': '}{problem}"


def _name_sources(message: str, sources: Mapping[str, str], file: str) -> str:
    """``message`` prefixed by the source of the key it names first, with the sources of any
    other keys it names (a check across keys) appended."""
    mentioned = list(dict.fromkeys(re.findall(r"\b[a-z]+\.[a-z_]+\b", message)))
    mentioned = [m for m in mentioned if m.split(".")[0] in SECTIONS]
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
    if source.startswith(_ENV_SOURCE):
        return f"environment variable {source[len(_ENV_SOURCE) :]}"
    return source


def _closest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


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
