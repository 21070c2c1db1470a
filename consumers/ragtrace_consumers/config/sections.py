"""The sections of the consumer configuration (``kafka``, ``redis``, ..., ``mapping``, ``serve``).

Each key is a field of its section: its type and check (:mod:`._values`), its default and its
description (the docstring under it, which becomes the generated docs). Cross-key rules are
model validators of their section. :mod:`.settings` assembles them into :class:`ConsumerConfig`.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, model_validator

from ragtrace.evaluation.judges.bounds import (
    DEFAULT_MAX_ANSWER_CHARS,
    DEFAULT_MAX_CONTEXT_CHARS,
    DEFAULT_MAX_PROMPT_TOKENS,
    DEFAULT_MAX_UNITS,
)
from ragtrace.evaluation.judges.spec import (
    DEFAULT_BUDGET_S,
    DEFAULT_TIMEOUT_S,
    JUDGE_NAMES,
    OUTPUT_MODES,
    PROVIDERS,
)
from ragtrace.evaluation.redaction import RedactionError, Redactor
from ragtrace_consumers.config._values import (
    Ascii,
    Bool,
    MappingSpec,
    NonEmpty,
    NonNegative,
    NonNegativeInt,
    OptHttpUrl,
    OptNonEmpty,
    OptPositiveInt,
    OptSecret,
    OptStr,
    OptUrl,
    Patterns,
    Port,
    Positive,
    PositiveInt,
    Rate,
    Rules,
    Str,
    Url,
    fail,
    one_of,
)
from ragtrace_consumers.config.flags import Flag
from ragtrace_consumers.errors import ConfigError
from ragtrace_consumers.scoring.assembly import DEFAULT_IDLE_S
from ragtrace_consumers.scoring.sampling import SamplerConfig

__all__ = [
    "KafkaSettings",
    "RedisSettings",
    "ExportSettings",
    "AssemblySettings",
    "SamplingSettings",
    "ScoringSettings",
    "JudgeSettings",
    "HealthSettings",
    "MappingSettings",
    "RedactionSettings",
    "ServeSettings",
    "WebSettings",
    "AuditSettings",
]

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class _Section(BaseModel):
    """One section of the file: frozen, unknown keys refused, each docstring its key's description."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


# --- the sections ------------------------------------------------------------------------------


class KafkaSettings(_Section):
    """The ``kafka`` section: brokers, topics, the consumer group and its security."""

    bootstrap_servers: NonEmpty = "127.0.0.1:9092"
    """Kafka brokers, comma-separated host:port list."""
    topic: NonEmpty = "otlp_spans"
    """Topic the collector's kafka exporter writes spans to (otlp_proto, partitioned by trace ID)."""
    group_id: NonEmpty = "ragtrace-consumer"
    """Consumer group: every replica uses the same group; scale out with replicas and partitions."""
    dlq_topic: NonEmpty = "otlp_spans.dlq"
    """Dead-letter topic for messages that cannot be decoded (the reason is in the headers)."""
    auto_offset_reset: Annotated[Str, one_of("earliest", "latest")] = "earliest"
    """Where a new consumer group starts reading: earliest or latest."""
    commit_interval_s: Positive = 1.0
    """Seconds between offset commits (only offsets whose spans are already stored are committed)."""
    max_poll_records: PositiveInt = 500
    """Most messages handed over by one poll."""
    client_id: NonEmpty = "ragtrace-consumer"
    """Kafka client ID prefix (the process ID is appended)."""
    session_timeout_ms: PositiveInt = 45_000
    """Milliseconds without a heartbeat after which a replica counts as dead and its partitions
    move to the others (the broker's group.min/max.session.timeout.ms bound it)."""
    drain_timeout_s: Positive = 60.0
    """On SIGTERM: seconds to let traces being scored finish before offsets are committed and the
    consumer leaves the group (unfinished ones are retried by another replica after their lease)."""
    security_protocol: Annotated[Str, one_of(*_PROTOCOLS)] = "PLAINTEXT"
    """How the consumer and the dead-letter producer talk to the brokers: PLAINTEXT, SSL (TLS),
    SASL_PLAINTEXT (SASL without TLS) or SASL_SSL (SASL over TLS)."""
    sasl_mechanism: Annotated[OptStr, one_of(*_SASL_MECHANISMS)] = None
    """SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; required with a SASL_* protocol, and
    then sasl_username and sasl_password are required too."""
    sasl_username: OptNonEmpty = None
    """SASL user name."""
    sasl_password: OptSecret = None
    """SASL password: set it with RAGTRACE_KAFKA_SASL_PASSWORD rather than here (it is a secret)."""
    ssl_cafile: OptNonEmpty = None
    """CA certificate (PEM file) the brokers' certificates are verified against (SSL, SASL_SSL);
    null: the system's trusted CAs."""
    ssl_certfile: OptNonEmpty = None
    """Client certificate (PEM file) for mutual TLS; it may hold the private key too."""
    ssl_keyfile: OptNonEmpty = None
    """Private key (PEM file) of ssl_certfile, when it is a separate file."""
    ssl_check_hostname: Bool = True
    """Check that a broker's certificate names the host connected to (false: testing only)."""

    @model_validator(mode="after")
    def _security_keys_agree(self) -> KafkaSettings:
        protocol, mechanism = self.security_protocol, self.sasl_mechanism
        if protocol.startswith("SASL_") and mechanism is None:
            raise fail(f"kafka.sasl_mechanism: required when kafka.security_protocol is {protocol}")
        if not protocol.startswith("SASL_") and mechanism is not None:
            raise fail(
                "kafka.sasl_mechanism: needs kafka.security_protocol SASL_SSL or "
                f"SASL_PLAINTEXT, got {protocol}"
            )
        for key in ("sasl_username", "sasl_password"):
            given = getattr(self, key) is not None
            if mechanism is not None and not given:
                raise fail(f"kafka.{key}: required with kafka.sasl_mechanism {mechanism}")
            if mechanism is None and given:
                raise fail(f"kafka.{key}: set but kafka.sasl_mechanism is not")
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            if getattr(self, key) is not None and not protocol.endswith("SSL"):
                raise fail(
                    f"kafka.{key}: needs kafka.security_protocol SSL or SASL_SSL, got {protocol}"
                )
        if self.ssl_keyfile is not None and self.ssl_certfile is None:
            raise fail(
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
    """The ``redis`` section: where traces, labels and the judge cache are kept."""

    url: Url = "redis://127.0.0.1:6379/0"
    """Redis holding traces being assembled, labels, the judge cache and the idempotency keys.
    A Redis Cluster (or Valkey cluster) node's plain ``redis://`` URL is recognised as such (any
    node will do); ``redis+sentinel://host:26379,host:26379/<primary name>/<db>`` asks Sentinels
    for the primary."""
    key_prefix: NonEmpty = "ragtrace"
    """Prefix of every Redis key ragtrace writes; replicas of one deployment share it."""
    password: OptSecret = None
    """Redis password (AUTH), given to the client apart from url so no library can print it:
    set it with RAGTRACE_REDIS_PASSWORD (a secret); it overrides a password inside url."""


class ExportSettings(_Section):
    """The ``export`` section: where evaluation spans and metrics are sent."""

    otlp_endpoint: Url = "http://127.0.0.1:4328"
    """Base URL of the collector's evaluation OTLP/HTTP receiver (/v1/traces and /v1/metrics are
    appended). Evaluation spans and metrics go here, never into the span topic."""
    service_name: NonEmpty = "ragtrace-consumer"
    """service.name of the evaluation spans and metrics this consumer emits."""
    metrics_interval_s: Positive = 5.0
    """Seconds between metric exports."""
    timeout_s: Positive = 10.0
    """Seconds one OTLP export may take before it counts as failed (and the trace is retried)."""
    metrics_otlp: Bool = True
    """Push metrics to otlp_endpoint every metrics_interval_s. The health server (health.enabled)
    serves them on GET /metrics either way; set false when Prometheus scrapes that directly, so
    nothing is counted twice (the Helm chart does)."""
    results_as: Annotated[Str, one_of("both", "events", "spans")] = "both"
    """How evaluation results are written: events (one gen_ai.evaluation.result OTLP log record
    per result, in the evaluated span's context, to /v1/logs), spans (ragtrace's evaluation
    spans with their span events, to /v1/traces) or both (the default while trace backends
    learn to show the log records; docs/semantic-conventions.md says which shows what)."""
    written_ttl_s: Positive = 604_800.0
    """Seconds a trace's written-back results are remembered, per metric family (`consume`'s
    Redis marks): a replay of the span topic, or spans of a scored trace arriving after
    assembly.ttl_s, within this time is neither judged nor written back again — as long as
    written_capacity holds that many marks (traces/s x families per trace, 1 to 3, x this)."""
    written_capacity: PositiveInt = 4_194_304
    """Write-back marks Redis keeps (`consume`): a fixed-size table of 12 bytes a mark, 50 MB by
    default, allocated by the first mark; it never grows. Size it 15 % above traces/s x
    families x written_ttl_s (at 10 traces/s with recall and groundedness, 7 days: 12 M marks,
    14 M here, 166 MB); a full table forgets its oldest marks early (a replay of those traces
    is judged again and re-sends the identical evaluation span)."""


class AssemblySettings(_Section):
    """The ``assembly`` section: when a trace is complete, leased and given up."""

    quiet_s: NonNegative = 5.0
    """A trace is complete (and scored) this many seconds after its generation span arrived: the
    quiet period lets spans exported later (by other services, or in a later batch) catch up. A
    root span arriving with the generation span makes the trace complete at once; a trace that
    shows no generation span (a root alone does not complete it: the generation may be in a
    later Kafka message) is scored max(quiet_s, 60) seconds after its first span arrived. An
    agent's model call that only asked for tool calls is no such generation span: the quiet
    period starts at the call that answers."""
    lease_s: Positive = 300.0
    """Seconds a replica holds a claimed trace; if it dies, another replica scores it after this.
    Must exceed the longest scoring (judge retries included)."""
    claim_batch: PositiveInt = 64
    """Most due traces claimed at once."""
    ttl_s: Positive = 3600.0
    """Seconds a trace's spans are kept after its last span arrived (a parked trace's, after its
    next retry time): an abandoned trace expires then. Must exceed max(quiet_s, 60) + lease_s."""
    max_attempts: PositiveInt = 200
    """Parks (judge unavailable or failing, write-back failed) after which a trace is given up and
    kept for inspection in the dead set instead of being retried again."""

    @model_validator(mode="after")
    def _outlives_a_lost_lease(self) -> AssemblySettings:
        # A trace must outlive its wait for completion plus one lost lease (a replica that died
        # holding it), or it expires before another replica can score it.
        least = max(self.quiet_s, DEFAULT_IDLE_S) + self.lease_s
        if self.ttl_s <= least:
            raise fail(
                f"assembly.ttl_s: must exceed the longest wait for completion "
                f"(max(assembly.quiet_s, {DEFAULT_IDLE_S:g})) plus assembly.lease_s "
                f"= {least:g}, got {self.ttl_s:g}"
            )
        return self


class SamplingSettings(_Section):
    """The ``sampling`` section: which traces are scored for recall and judged."""

    recall_rate: Rate = 1.0
    """Share of traces scored for recall (labelled questions only), 0 to 1. Sampling is
    deterministic by trace ID, so every replica makes the same choice, and the judged traces are
    a subset of the recall-scored ones whenever judge_rate <= recall_rate."""
    judge_rate: Rate = 1.0
    """Share of traces sent to the groundedness judge, 0 to 1."""
    rules: Rules = ()
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
    salt: Ascii = ""
    """Mixed into the trace-ID hash: change it to sample a different set of traces at the same
    rates (ASCII; every replica must use the same salt)."""

    def sampler_config(self) -> SamplerConfig:
        """The :class:`~ragtrace_consumers.scoring.sampling.Sampler` configuration of these settings."""
        return SamplerConfig(
            recall_rate=self.recall_rate,
            judge_rate=self.judge_rate,
            rules=self.rules,
            salt=self.salt,
        )


class ScoringSettings(_Section):
    """The ``scoring`` section: the cut-off and thresholds of the retrieval scores."""

    k: PositiveInt = 5
    """Cut-off of recall@k, precision@k and nDCG@k, per retrieval step: an answer drawn from
    several searches is scored on the union of each one's top k. A step whose span declares its
    own top-k (gen_ai.retrieval.top_k, or gen_ai.request.top_k as @ragtrace.retrieve(top_k=...)
    records it) is cut at that unless k_from_trace is false."""
    k_from_trace: bool = True
    """Cut each retrieval step at the top-k its span declares (k stays the cut-off of a step
    that declares none); false pins every step to k."""
    recall_definition: Annotated[Str, one_of("mean_recall", "hit_rate")] = "mean_recall"
    """Recall definition used for the attribution cell: mean_recall or hit_rate."""
    recall_threshold: Rate = 0.5
    """A recall below this fails retrieval (attribution cell)."""
    groundedness_threshold: Rate = 0.8
    """A groundedness below this fails generation (attribution cell)."""
    session_turns: NonNegativeInt = 3
    """A turn of a session (session.id, gen_ai.conversation.id) is judged against its own context
    and the evidence of at most this many earlier turns of the same session (0: each turn on its
    own). Still one judge call per turn."""
    session_max_age_s: Positive = 1800.0
    """Earlier turns that ended more than this many seconds before a turn are not its evidence;
    a session's evidence is forgotten this long after its last turn."""


class JudgeSettings(_Section):
    """The ``judge`` section: the groundedness judge, its limits, budget and cache."""

    name: Annotated[
        Str,
        one_of(*JUDGE_NAMES),
        Flag(
            "--judge",
            "auto: anthropic when ANTHROPIC_API_KEY is set, else lexical "
            "(default: the config's judge.name, auto)",
        ),
    ] = "auto"
    """Groundedness judge: lexical (model-free), a model judge named by the API it calls
    (anthropic, bedrock: Claude on Amazon Bedrock, vertex: Claude on Google Vertex AI, openai: any
    OpenAI-compatible endpoint), or auto (judge.provider when set, else anthropic when
    ANTHROPIC_API_KEY is set, else lexical)."""
    provider: Annotated[OptStr, one_of(*PROVIDERS)] = None
    """The API a model judge is reached through (anthropic, bedrock, vertex, openai), for
    judge.name auto; null: the API judge.name names. It must agree with a model judge's name."""
    model: OptNonEmpty = None
    """Judge model ID; null uses the judge's default (RAGTRACE_JUDGE_MODEL also sets it). The
    openai judge has no default: name the model your server serves."""
    region: OptNonEmpty = None
    """Cloud region of the bedrock or vertex judge; null: AWS_REGION / AWS_DEFAULT_REGION
    (bedrock) or CLOUD_ML_REGION (vertex)."""
    project: OptNonEmpty = None
    """Google Cloud project of the vertex judge; null: ANTHROPIC_VERTEX_PROJECT_ID, else the
    project of the Application Default Credentials."""
    base_url: OptUrl = None
    """Endpoint of the judge's API, e.g. an OpenAI-compatible server (http://vllm:8000/v1) or an
    Anthropic gateway; null: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the provider's own.
    Credentials stay in each provider's variables (ANTHROPIC_API_KEY, OPENAI_API_KEY, the AWS
    chain, Application Default Credentials)."""
    output_mode: Annotated[Str, one_of(*OUTPUT_MODES)] = "tools"
    """How the openai judge gets structured output: tools (a forced function call) or json (JSON
    mode, for servers without tool calling)."""
    concurrency: PositiveInt = 8
    """Judge calls in flight at once; when all are busy the consumer stops reading Kafka. The
    lexical judge answers in process instead (up to 512 traces in flight, no judge threads)."""
    timeout_s: Positive = DEFAULT_TIMEOUT_S
    """Seconds one judge request may take (capped by what is left of judge.budget_s)."""
    budget_s: Positive = DEFAULT_BUDGET_S
    """Total seconds one judgement may take, every request and retry wait included (the one
    retry owner honours retry-after within it); past it the trace is parked. The start-up
    check refuses an assembly.lease_s that a full round of judgements could outlast."""
    max_units: PositiveInt = DEFAULT_MAX_UNITS
    """Most answer units (sentences, list items, code blocks) one groundedness judgement takes
    on; a longer answer is not judged: its result is the error too_large, naming the limit."""
    max_answer_chars: PositiveInt = DEFAULT_MAX_ANSWER_CHARS
    """Most answer characters one judgement takes on (beyond: too_large, as judge.max_units)."""
    max_context_chars: PositiveInt = DEFAULT_MAX_CONTEXT_CHARS
    """Most context characters, all passages together, one judgement takes on (beyond:
    too_large). At the defaults one offline judgement takes about a second."""
    max_prompt_tokens: PositiveInt = DEFAULT_MAX_PROMPT_TOKENS
    """Most estimated prompt tokens a model judge is sent for one judgement (beyond: too_large,
    no call made); keep it under the judge model's context window."""
    park_backoff_s: Positive = 30.0
    """Seconds a parked trace waits before its first retry; grows with the trace's age."""
    park_backoff_max_s: Positive = 600.0
    """Longest wait between retries of a parked trace."""
    give_up_after_s: Positive = 86400.0
    """A trace still unjudged this many seconds after it ended is written without groundedness."""
    calls_per_minute: PositiveInt = 600
    """Judge calls per minute across all replicas (shared budget in Redis); over it, traces are
    scored without groundedness and counted as budget-exhausted."""
    tokens_per_minute: PositiveInt = 2_000_000
    """Judge tokens per minute across all replicas (estimated before the call)."""
    cache_ttl_s: PositiveInt = 604_800
    """Seconds a judge result stays cached (same answer, context, model and prompt cost nothing)."""
    mode: Annotated[Str, one_of("realtime", "batch")] = "realtime"
    """realtime: one Messages API call per judgement, scored within seconds. batch: judgements go
    through the Message Batches API at half the price; a trace waits parked until its batch has
    ended (usually minutes, at most 24 hours). Batch mode needs the anthropic judge."""

    @model_validator(mode="after")
    def _backoff_bounded(self) -> JudgeSettings:
        if self.park_backoff_max_s < self.park_backoff_s:
            raise fail("judge.park_backoff_max_s: must be >= judge.park_backoff_s")
        if self.provider is not None and self.name not in ("auto", self.provider):
            raise fail(
                f"judge.provider: {self.provider!r} contradicts judge.name {self.name!r} "
                "(a model judge's name is its provider; use judge.name auto, or drop the provider)"
            )
        api = self.provider or self.name
        if self.mode == "batch" and api in PROVIDERS and api != "anthropic":
            raise fail(
                f"judge.mode: batch needs the anthropic judge (the Message Batches API), "
                f"not {api!r}"
            )
        return self


class HealthSettings(_Section):
    """The ``health`` section: the probe endpoints and the start-up wait."""

    enabled: Bool = False
    """Serve /livez and /readyz for Kubernetes probes. /livez fails when the consume loop has made no
    progress for liveness_timeout_s; /readyz fails while Redis does not answer or the consumer has
    neither a partition assignment nor a broker connection (and while draining after SIGTERM).
    Off by default when run by hand; the Helm chart turns it on."""
    host: NonEmpty = "127.0.0.1"
    """Address the health endpoints listen on (0.0.0.0 in a container, so the kubelet reaches them)."""
    port: Port = 8086
    """Port of the health endpoints (0: a free port, logged at start)."""
    liveness_timeout_s: Positive = 120.0
    """Seconds without progress of the consume loop after which /livez fails (it makes progress
    several times a second when healthy, even when idle or backpressured)."""
    startup_wait_s: NonNegative = 60.0
    """Seconds start-up waits for Redis and the Kafka brokers to answer; past it, `ragtrace consume`
    exits (status 1) with one line naming the dependency and its address. Once running, an
    outage never stops the consumer: every call is retried with backoff and /readyz says which
    dependency is down (docs/reliability.md)."""


class MappingSettings(_Section):
    """In-house span keys (see :mod:`ragtrace_consumers.readers.mapping`)."""

    role_attribute: OptNonEmpty = None
    """In-house spans, scored without code: the attribute whose value names a span's role (null: no
    mapping; the known dialects are read either way). Each key below is an attribute key,
    optionally with a JSON path into its JSON value: "app.rag.result:$.hits[*].doc_key"."""
    retrieval_value: NonEmpty = "retrieval"
    """Value of role_attribute on a retrieval span."""
    generation_value: NonEmpty = "generation"
    """Value of role_attribute on a generation span."""
    pipeline_value: NonEmpty = "pipeline"
    """Value of role_attribute on the request (pipeline) span."""
    query: MappingSpec = None
    """Where the query text is."""
    documents: MappingSpec = None
    """Where a JSON list of documents is (read like every dialect's: ID field, metadata, text)."""
    chunk_ids: MappingSpec = None
    """Where the ranked chunk IDs are (a list attribute, or a JSON path ending in [*])."""
    chunk_texts: MappingSpec = None
    """Where the chunk texts are (parallel to chunk_ids)."""
    chunk_scores: MappingSpec = None
    """Where the chunk scores are (parallel to chunk_ids)."""
    answer: MappingSpec = None
    """Where the answer is (JSON envelopes are unwrapped)."""
    metadata_id_keys: NonEmpty = "id,doc_id,document_id,chunk_id,node_id,_id,uuid"
    """Document-metadata keys tried, in order, for a chunk's ID in every dialect (comma-separated);
    then source+position, and only then a content hash (recall n/a)."""
    retrieval_tools: Str = ""
    """Tool names whose calls are retrieval steps whatever they return (comma-separated); any
    other tool call is one only when its result holds chunk-like items (documents with an ID
    and a text), so a calculator never is."""
    system_context: bool = False
    """Judge an answer with no retrieval step, no listed documents and no tool results against the
    context in its system message (system/developer messages, gen_ai.system_instructions; a
    paragraph of instructions only is never context): for apps whose retrieval is not traced,
    such as MLflow's GenAI-conventions export, which drops the retriever span. Off by default, so
    a plain chat app is never judged against its own system prompt."""

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
        tools = tuple(t.strip() for t in self.retrieval_tools.split(",") if t.strip())
        return SpanReaders.build(rules, keys, tools, system_context=self.system_context)


class RedactionSettings(_Section):
    """The ``redaction`` section: personal data kept from the judge and from the write-back."""

    patterns: Str = ""
    """Built-in patterns redacted from the query, context and answer before anything reaches a
    judge or leaves as a write-back, comma-separated: email, phone, card (a payment card number
    passing the Luhn check); empty: none. Each value becomes a placeholder such as <EMAIL_1>,
    the same one wherever the value appears in the trace, so groundedness is judged as before."""
    custom: Patterns = {}
    """More patterns, name -> regular expression (the placeholder is the upper-cased name:
    employee_id -> <EMPLOYEE_ID_1>), applied before the built-in ones; e.g.
      custom: {employee_id: "EMP-[0-9]{6}"}
    RAGTRACE_REDACTION_CUSTOM takes the same mapping as JSON."""

    @model_validator(mode="after")
    def _known_patterns(self) -> RedactionSettings:
        self.redactor()  # a bad name fails at start, naming the key
        return self

    def redactor(self) -> Redactor:
        """The :class:`~ragtrace.evaluation.redaction.Redactor` these settings describe."""
        try:
            return Redactor.build(self.patterns.split(","), self.custom)
        except RedactionError as exc:
            raise fail(f"redaction.patterns: {exc}") from None


_SIGNALS = ("all", "traces", "metrics")


class ServeSettings(_Section):
    """The ``serve`` section: ``ragtrace serve``'s addresses, state, outputs, bounds and who may
    reach it (``consume`` does not read it). Each key with a flag is overridden by it."""

    host: Annotated[
        NonEmpty,
        Flag("--host", "address to listen on (default: {default}; 0.0.0.0 for every interface)"),
    ] = "127.0.0.1"
    """Address the OTLP/HTTP receiver (and the web view) listens on; 0.0.0.0 for every interface
    (then serve.token is required, unless serve.insecure)."""
    port: Annotated[
        Port, Flag("--port", "OTLP/HTTP port (default: {default}; 0 picks a free one)")
    ] = 4318
    """Port of the OTLP/HTTP receiver and the web view (0: a free port, printed at start)."""
    labels: Annotated[
        OptNonEmpty,
        Flag(
            "--labels",
            "labelled questions, JSON Lines (default: $RAGTRACE_LABELS; none: recall is not "
            "scored; {stdin})",
            metavar="PATH",
            reads_file=True,
        ),
    ] = None
    """Labelled questions (a JSON Lines labels file) recall is scored against; null: recall is
    not scored. Its variable is RAGTRACE_LABELS."""
    state: Annotated[
        OptNonEmpty,
        Flag(
            "--state",
            "SQLite state file (default: $RAGTRACE_STATE, else "
            "~/.local/state/ragtrace/embedded.sqlite3)",
            metavar="PATH",
        ),
    ] = None
    """SQLite file holding the traces being assembled, the judge cache, the written-back marks
    and the scored traces; null: $XDG_STATE_HOME/ragtrace/embedded.sqlite3 (XDG_STATE_HOME
    defaults to ~/.local/state). Its variable is RAGTRACE_STATE."""
    otlp_endpoint: Annotated[
        OptHttpUrl,
        Flag(
            "--otlp-endpoint",
            "send evaluation spans and metrics to this OTLP/HTTP base URL "
            "(default: $RAGTRACE_EXPORT_OTLP_ENDPOINT; unset: kept local)",
            metavar="URL",
        ),
    ] = None
    """OTLP/HTTP base URL evaluation results and metrics are sent to (and the app's metrics and
    logs forwarded to); null: kept local. Its variable is export.otlp_endpoint's,
    RAGTRACE_EXPORT_OTLP_ENDPOINT (the file's export.otlp_endpoint is consume's only)."""
    otlp_signals: Annotated[
        Str,
        one_of(*_SIGNALS),
        Flag(
            "--otlp-signals",
            "what goes to --otlp-endpoint: evaluation results (spans and "
            "gen_ai.evaluation.result log records, as export.results_as says) and metrics (all: "
            "an OpenTelemetry Collector), evaluation spans only (traces; a trace backend such as "
            "Phoenix, Jaeger or Tempo, which take no /v1/logs or /v1/metrics) or metrics only "
            "(default: {default})",
        ),
    ] = "all"
    """What goes to serve.otlp_endpoint: all (evaluation results as export.results_as says, and
    metrics: an OpenTelemetry Collector), traces (evaluation spans only: a trace backend without
    /v1/logs and /v1/metrics, e.g. Phoenix) or metrics. With all, a signal the endpoint refuses
    (404, 405, 415, 501) is turned off for it after one warning; the others keep going."""
    phoenix_url: Annotated[
        OptStr,
        Flag(
            "--phoenix-url",
            "also post every score to this Arize Phoenix as annotations (its evaluation "
            "columns: each metric on the span it judged, the cell on the root span and the "
            "trace, gold documents on the retriever), e.g. http://127.0.0.1:6006",
            metavar="URL",
        ),
    ] = None
    """Arize Phoenix base URL (http://127.0.0.1:6006) every score is also posted to, as span
    annotations, so it shows in Phoenix's evaluation columns; null: none."""
    phoenix_evaluation_spans: Annotated[
        Bool,
        Flag(
            "--phoenix-evaluation-spans",
            "with --phoenix-url: still send evaluation spans to --otlp-endpoint (by default "
            "they are not: Phoenix shows the annotations instead)",
            switch=True,
        ),
    ] = False
    """With serve.phoenix_url: still send evaluation spans to serve.otlp_endpoint (log records
    still go when serve.otlp_signals is all)."""
    metrics_host: Annotated[
        NonEmpty,
        Flag("--metrics-host", "address of the Prometheus /metrics endpoint (default: {default})"),
    ] = "127.0.0.1"
    """Address of serve's Prometheus /metrics endpoint."""
    metrics_port: Annotated[
        Port,
        Flag(
            "--metrics-port",
            "port of the Prometheus /metrics endpoint (default: {default}; 0 picks a free one)",
        ),
    ] = 9464
    """Port of serve's Prometheus /metrics endpoint (0: a free port)."""
    metrics: Annotated[Bool, Flag("--no-metrics", "serve no /metrics endpoint", switch=True)] = True
    """Serve the Prometheus /metrics endpoint."""
    token: Annotated[
        OptSecret,
        Flag(
            "--token",
            "bearer token every request (OTLP, /metrics, every route) must carry as "
            "'Authorization: Bearer TOKEN'; required with a --host or --metrics-host beyond "
            "loopback (default: the config's serve.token, $RAGTRACE_SERVE_TOKEN: prefer it, a "
            "command line is visible to other users)",
            metavar="TOKEN",
        ),
    ] = None
    """Bearer token every request to serve's HTTP endpoints (the OTLP receiver, /metrics, every
    other route) must carry as 'Authorization: Bearer <token>' (else 401); set it with
    RAGTRACE_SERVE_TOKEN (a secret). Required to listen beyond loopback, unless insecure. OTLP
    exporters send it with OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"."""
    insecure: Annotated[
        Bool,
        Flag(
            "--insecure",
            "allow listening beyond loopback without a token (default: serve.insecure, false)",
            switch=True,
        ),
    ] = False
    """Listen beyond loopback without a token (anyone who reaches the port may send traces and
    read /metrics); without it such a start is refused."""
    tls_cert: Annotated[
        OptNonEmpty,
        Flag(
            "--tls-cert",
            "serve HTTPS with this certificate (chain) (default: serve.tls_cert; none: HTTP)",
            metavar="PEM",
        ),
    ] = None
    """PEM certificate (chain) serve's HTTP endpoints answer HTTPS with (null: plain HTTP)."""
    tls_key: Annotated[
        OptNonEmpty,
        Flag(
            "--tls-key",
            "private key of --tls-cert (default: serve.tls_key; none: inside --tls-cert)",
            metavar="PEM",
        ),
    ] = None
    """PEM private key of tls_cert (null: the key is inside the tls_cert file)."""
    max_pending_traces: Annotated[
        PositiveInt,
        Flag(
            "--max-pending-traces",
            "traces held for scoring at most; a request that would exceed it is "
            "refused with 503 + Retry-After (default: {default})",
            metavar="N",
        ),
    ] = 10_000
    """Traces held for scoring at most: a request that would make the state file hold more is
    refused whole with 503 and Retry-After (413 when it alone could never fit)."""
    max_pending_mib: Annotated[
        PositiveInt,
        Flag(
            "--max-pending-mib",
            "span bytes held for scoring at most, in MiB (default: {default})",
            metavar="MIB",
        ),
    ] = 256
    """Span bytes held for scoring at most, in MiB (refused as serve.max_pending_traces)."""
    service_name: NonEmpty = "ragtrace-embedded"
    """service.name of the evaluation spans and metrics serve emits."""
    workers: OptPositiveInt = None
    """Scoring worker threads; null: judge.concurrency."""
    request_timeout_s: Positive = 10.0
    """Seconds a stalled upload or an idle connection is kept before it is closed."""
    http_workers: PositiveInt = 64
    """HTTP connections served at once (the rest wait in the listen queue)."""

    @model_validator(mode="after")
    def _key_needs_cert(self) -> ServeSettings:
        if self.tls_key is not None and self.tls_cert is None:
            raise fail("serve.tls_key: needs serve.tls_cert (the certificate the key belongs to)")
        return self

    @property
    def max_pending_bytes(self) -> int:
        """``max_pending_mib`` in bytes."""
        return self.max_pending_mib * 1024 * 1024


class WebSettings(_Section):
    """The ``web`` section: the embedded evaluator's web view (``ragtrace serve``'s own address)."""

    enabled: Annotated[
        Bool,
        Flag(
            "--no-web",
            "serve no web view (default: overview, traces and labelling under /ui/ on the "
            "OTLP address; the config's web.enabled)",
            switch=True,
        ),
    ] = True
    """Serve the web view (overview, trace list, trace pages, labelling) under /ui/ on serve's
    OTLP/HTTP address, under the receiver's rules: loopback by default, serve.token asked for
    beyond it (browsers sign in once: an HttpOnly, SameSite=Strict session cookie; scripts send
    Authorization: Bearer <token>), HTTPS with serve.tls_cert."""
    trace_url_template: Annotated[
        OptUrl,
        Flag(
            "--trace-url",
            "link each trace page to your trace backend: a URL with {{trace_id}} "
            "(and optionally {{span_id}}), e.g. http://127.0.0.1:16686/trace/{{trace_id}} "
            "(default: the config's web.trace_url_template)",
            metavar="TEMPLATE",
        ),
    ] = None
    """Link from a trace page to the same trace in your trace backend: an http(s) URL with
    {trace_id} (and optionally {span_id}, the scored span) filled in, e.g.
    http://127.0.0.1:16686/trace/{trace_id} for Jaeger."""


class AuditSettings(_Section):
    """The ``audit`` section: the standing audit of the judge (``ragtrace serve``'s web view)."""

    share: Rate = 0.02
    """Share of judged traces marked to audit, 0 to 1: chosen from the trace ID (every replica
    marks the same ones) and listed in the web view, where a person agrees or disagrees with each
    unit verdict of the judge; the answers are audit labels, counted in the judge's running
    agreement (kappa) and fed to the next calibration."""
