"""The embedded evaluator: one process, no Kafka and no Redis (``ragtrace serve``, ``ragtrace demo``).

It builds the SAME scoring side the Kafka consumer runs, through the same wiring root
(:func:`~ragtrace_consumers.runtime.wiring.build_scoring`), over different seams:

* spans come from an :class:`~ragtrace_consumers.intake.otlp_receiver.OtlpHttpReceiver` instead of Kafka;
* the judge budget lives in process memory; the label store is served from memory and every
  set it loads (the JSONL file, with the questions labelled in the web view laid over it) is
  kept in the state file (:mod:`ragtrace_consumers.stores.sqlite_labels`); the
  traces being assembled (:mod:`ragtrace_consumers.stores.sqlite_traces`), the judge-result cache,
  the idempotency store and a scored-results table live in a local SQLite file
  (:mod:`ragtrace_consumers.stores.sqlite_state`, the results by
  :mod:`ragtrace_consumers.stores.scored_results`) and survive a restart, killed or graceful: a request
  is answered 2xx only once its spans are committed there, and a restart resumes every trace;
* memory is bounded by ``max_pending_traces`` and ``max_pending_bytes``: a request that would
  make the store hold more is refused whole with 503 + Retry-After before anything is stored
  (413 when it could never fit);
* scores go to a :class:`~ragtrace_consumers.writeback.recording_sink.RecordingSink`, which keeps every
  scored trace in that table and, when an OTLP endpoint is configured, first sends the
  evaluation span there (the consumer's :class:`~ragtrace_consumers.writeback.otlp_sink.OtlpScoreSink`);
* metrics are the consumer's :class:`~ragtrace_consumers.telemetry.metrics.ConsumerMetrics`, served on a
  Prometheus ``/metrics`` endpoint (and pushed over OTLP when an endpoint is configured).

The web view (:mod:`ragtrace_consumers.webview`, unless ``config.web.enabled`` is false) is
served by the same receiver under ``/ui/``, read from the same state file; a label saved there
re-scores its trace through the same pipeline (:mod:`ragtrace_consumers.runtime.rescoring`).

Scoring runs on :class:`~ragtrace_consumers.scoring.workers.ScoringWorkers` driven by one loop thread
that wakes when spans arrive, when a trace finishes, or when the next trace falls due.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from typing_extensions import Self

from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.judges import Judge
from ragtrace.evaluation.labels import load_labels
from ragtrace.masking import mask_url
from ragtrace_consumers.config import ConsumerConfig, ServeSettings
from ragtrace_consumers.errors import CannotListen, ReceiverBusy, RequestTooLarge, StoreFull
from ragtrace_consumers.intake.http_server import AccessPolicy, check_exposure, server_tls
from ragtrace_consumers.intake.metrics_endpoint import MetricsEndpoint
from ragtrace_consumers.intake.otlp_receiver import LOGS_PATH, Accepted, OtlpHttpReceiver
from ragtrace_consumers.intake.signal_forwarder import SignalForwarder, decode_log_events
from ragtrace_consumers.model import ScoreSink, SkippedTrace, SpanRecord
from ragtrace_consumers.runtime.rescoring import Rescoring
from ragtrace_consumers.runtime.wiring import Stores, build_scoring, require_realtime_judging
from ragtrace_consumers.scoring.judging import judge_from_settings
from ragtrace_consumers.scoring.workers import check_lease, judgement_bound_s
from ragtrace_consumers.stores.memory import MemoryJudgeBudget
from ragtrace_consumers.stores.private_files import private_state_file
from ragtrace_consumers.stores.scored_results import ScoredResult
from ragtrace_consumers.stores.sqlite_labels import SqliteLabelStore
from ragtrace_consumers.stores.sqlite_state import SqliteSessionEvidence, SqliteState
from ragtrace_consumers.stores.sqlite_traces import SqliteTraceStore
from ragtrace_consumers.webview import Sessions, WebView, WebViewOptions
from ragtrace_consumers.writeback.recording_sink import RecordingSink
from ragtrace_consumers.writeback.refused_signals import RefusedSignals

__all__ = [
    "EmbeddedEvaluator",
    "describe_results",
    "own_state_path",
    "results_for",
]

_log = logging.getLogger(__name__)

_CHOSEN_BY = "serve --otlp-signals traces, or serve.otlp_signals, sends evaluation spans only"
_SERVE_SIGNALS = {"logs": _CHOSEN_BY, "metrics": _CHOSEN_BY}


def own_state_path() -> Path:
    """Where the state file is when ``serve.state`` is null:
    ``$XDG_STATE_HOME/ragtrace/embedded.sqlite3`` (or ~/.local/state)."""
    return _own_state_directory() / "embedded.sqlite3"


def _own_state_directory() -> Path:
    """``$XDG_STATE_HOME/ragtrace`` (or ~/.local/state/ragtrace): ragtrace's own directory."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ragtrace"


def results_for(serve: ServeSettings, configured: str) -> str | None:
    """What the embedded evaluator sends to its OTLP endpoint (``export.results_as``'s values;
    None: nothing). ``otlp_signals`` ``traces`` names a backend that takes spans only (Phoenix:
    no ``/v1/logs``); with the Phoenix sink on, evaluation spans go only when asked
    (``phoenix_evaluation_spans``)."""
    events = configured in ("both", "events") and serve.otlp_signals == "all"
    spans = configured in ("both", "spans") or serve.otlp_signals == "traces"
    if serve.phoenix_url is not None and not serve.phoenix_evaluation_spans:
        spans = False
    if events and spans:
        return "both"
    return "events" if events else "spans" if spans else None


def describe_results(config: ConsumerConfig) -> str:
    """Where results leave, in one line for ``serve``'s start-up banner."""
    serve = config.serve
    if serve.otlp_endpoint is None or serve.otlp_signals == "metrics":
        return "kept local (no OTLP endpoint for them)"
    sent = results_for(serve, config.export.results_as)
    if sent is None:
        return (
            "kept local (Phoenix shows them as annotations; --phoenix-evaluation-spans sends spans)"
        )
    what = {
        "both": "gen_ai.evaluation.result log records and evaluation spans",
        "events": "gen_ai.evaluation.result log records",
        "spans": "evaluation spans",
    }[sent]
    return f"{what} to {mask_url(serve.otlp_endpoint)}"


class EmbeddedEvaluator:
    """The receiver, the Pipeline and its stores in one object: :meth:`start`, then :meth:`stop`.

    ``config`` supplies the serve and web sections (where it listens, keeps its state, sends
    results; its bounds and access) and the assembly, sampling, scoring, judge, export and
    mapping sections (its kafka, redis and health sections are not used; of export, not the
    endpoint: ``serve.otlp_endpoint`` is serve's). ``judge`` overrides the one ``config.judge``
    names. ``extra_metric_readers`` are added to the meter provider (tests pass an in-memory
    reader).
    """

    def __init__(
        self,
        config: ConsumerConfig | None = None,
        *,
        judge: Judge | None = None,
        extra_metric_readers: Sequence[MetricReader] = (),
    ) -> None:
        self.config = config = config or ConsumerConfig.defaults()
        self.settings = settings = config.serve
        require_realtime_judging(config)
        self.judge: Judge = judge or judge_from_settings(config.judge)
        check_lease(config.assembly.lease_s, judgement_bound_s(self.judge))
        token = settings.token
        self.access = AccessPolicy(None if token is None else token.get_secret_value())
        hosts = {"the OTLP receiver": settings.host}
        if settings.metrics:
            hosts["/metrics"] = settings.metrics_host
        check_exposure(hosts, self.access, insecure=settings.insecure)
        self._tls = server_tls(settings.tls_cert, settings.tls_key)
        # Our own directory is tightened when an older version left it open; a directory the
        # user chose is only warned about.
        self.state_path = Path(settings.state) if settings.state else own_state_path()
        own = self.state_path.parent.absolute() == _own_state_directory().absolute()
        private_state_file(self.state_path, tighten_directory=own)
        self.state = SqliteState(self.state_path)
        try:
            self._build(extra_metric_readers)
        except BaseException:
            traces = getattr(self, "traces", None)
            if traces is not None:
                traces.close()
            self.state.close()
            raise
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._loop: threading.Thread | None = None
        self._metrics_server: MetricsEndpoint | None = None

    def _build(self, extra_readers: Sequence[MetricReader]) -> None:
        from ragtrace_consumers.writeback.otlp_sink import (
            OtlpScoreSink,
            make_meter_provider,
            make_resource,
        )

        s, cfg = self.settings, self.config
        labels = SqliteLabelStore(self.state)
        labels.start(load_labels(s.labels) if s.labels is not None else [], source=s.labels)
        readers = list(extra_readers)
        self.prometheus_registry = None
        if s.metrics:
            from opentelemetry.exporter.prometheus import PrometheusMetricReader
            from prometheus_client import CollectorRegistry

            # A private registry: several evaluators (tests) never collide in the global one.
            self.prometheus_registry = CollectorRegistry(auto_describe=True)
            readers.append(PrometheusMetricReader(registry=self.prometheus_registry))
        resource = make_resource(s.service_name)
        refusals = (
            None if s.otlp_endpoint is None else RefusedSignals(s.otlp_endpoint, _SERVE_SIGNALS)
        )
        traces_to = s.otlp_endpoint if s.otlp_signals in ("all", "traces") else None
        metrics_to = s.otlp_endpoint if s.otlp_signals in ("all", "metrics") else None
        self.meter_provider: MeterProvider = make_meter_provider(
            resource,
            endpoint=metrics_to,
            interval_s=cfg.export.metrics_interval_s,
            timeout_s=cfg.export.timeout_s,
            readers=readers,
            refusals=refusals,
        )
        state = self.state

        results_as = results_for(s, cfg.export.results_as)

        def sink(thresholds: Thresholds) -> RecordingSink:
            inner: ScoreSink | None = None
            if traces_to is not None and results_as is not None:
                inner = OtlpScoreSink.to_collector(
                    traces_to,
                    resource,
                    timeout_s=cfg.export.timeout_s,
                    recall_threshold=thresholds.recall,
                    groundedness_threshold=thresholds.groundedness,
                    results_as=results_as,
                    refusals=refusals,
                )
            if s.phoenix_url is not None:
                from ragtrace_consumers.writeback.phoenix_sink import PhoenixSink

                inner = PhoenixSink(
                    s.phoenix_url,
                    inner,
                    timeout_s=cfg.export.timeout_s,
                    recall_threshold=thresholds.recall,
                    groundedness_threshold=thresholds.groundedness,
                )
            return RecordingSink(state.results, inner, labels=labels)

        self.labels = labels
        self.traces = SqliteTraceStore(
            self.state_path,
            ttl_s=cfg.assembly.ttl_s,
            max_attempts=cfg.assembly.max_attempts,
            max_traces=s.max_pending_traces,
            max_bytes=s.max_pending_bytes,
        )
        scoring = build_scoring(
            cfg,
            Stores(
                traces=self.traces,
                labels=labels,
                cache=state.judge_cache,
                idempotency=state.idempotency,
                budget=MemoryJudgeBudget(cfg.judge.calls_per_minute, cfg.judge.tokens_per_minute),
                skips=state.skipped,
                sessions=SqliteSessionEvidence(
                    state,
                    max_turns=max(1, cfg.scoring.session_turns),
                    ttl_s=cfg.scoring.session_max_age_s,
                ),
            ),
            sink,
            self.judge,
            cfg.mapping.readers(),
            meter_provider=self.meter_provider,
            workers=s.workers,
        )
        self.metrics, self.sink = scoring.metrics, scoring.sink
        info = self.judge.info
        self.metrics.set_audit(
            lambda: self.state.audits.confusion(info.name, info.prompt_sha256),
            info.model or info.name,
        )
        self.pipeline, self.workers, self.early = (
            scoring.pipeline,
            scoring.workers,
            scoring.admission,
        )
        self._forward = (
            SignalForwarder(s.otlp_endpoint, refusals=refusals)
            if s.otlp_endpoint is not None
            else None
        )
        self.web = self._web_view() if cfg.web.enabled else None
        self.receiver = OtlpHttpReceiver(
            self._accept,
            host=s.host,
            port=s.port,
            meter_provider=self.meter_provider,
            timeout_s=s.request_timeout_s,
            max_workers=s.http_workers,
            other_signals=self._other_signal,
            admission=self.early,
            access=self.access,
            tls=self._tls,
            web=self.web,
        )

    def _web_view(self) -> WebView:
        web = self.config.web
        return WebView(
            self.state,
            self.labels,
            options=WebViewOptions(
                trace_url_template=web.trace_url_template,
                judge=self.judge.info,
                groundedness_threshold=self.config.scoring.groundedness_threshold,
                audit_share=self.config.audit.share,
            ),
            sessions=Sessions(self.access.token, secure_cookie=self._tls is not None),
            on_label=lambda _q, _v: self._wake.set(),
            rescore=Rescoring(self.state.results, self.pipeline, self.sink),
        )

    # --- lifecycle --------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        """The OTLP/HTTP base URL applications export to."""
        return str(self.receiver.endpoint)

    @property
    def web_url(self) -> str | None:
        """The web view's address (None: not served)."""
        return None if self.web is None else f"{self.endpoint}/ui/"

    @property
    def metrics_url(self) -> str | None:
        server = self._metrics_server
        return None if server is None else server.url

    def start(self) -> Self:
        if self._loop is not None:
            return self
        if self.prometheus_registry is not None:
            try:
                self._metrics_server = MetricsEndpoint(
                    self.prometheus_registry,
                    self.settings.metrics_host,
                    self.settings.metrics_port,
                    access=self.access,
                    tls=self._tls,
                ).start()
            except CannotListen:
                self.stop()  # the receiver's socket and the state file, opened already
                raise
        resumed = self.traces.recover()  # leases of a previous (killed) process: due now
        if resumed:
            _log.info("resuming %d traces a previous run was scoring", resumed)
        self._loop = threading.Thread(target=self._run, name="ragtrace-embedded", daemon=True)
        self._loop.start()
        self.receiver.start()
        return self

    def stop(self, drain_timeout_s: float = 10.0) -> None:
        """Stop receiving (requests in progress finish and answer first), finish the traces
        being scored (up to ``drain_timeout_s``), flush metrics and close the state file.
        Traces still assembling, or not finished in time, stay in the state file: the next
        start resumes them."""
        self.receiver.stop()
        self._stopping.set()
        self._wake.set()
        self.workers.wake()
        if self._loop is not None:
            self._loop.join()
            self._loop = None
        self.workers.drain(drain_timeout_s)
        self.workers.shutdown()
        server = self._metrics_server
        if server is not None:
            server.stop()
            self._metrics_server = None
        self.sink.shutdown()
        self.early.flush()
        self.meter_provider.shutdown()
        self.traces.close()
        self.state.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- spans in, traces scored ------------------------------------------------------------
    def _accept(self, spans: Sequence[SpanRecord]) -> Accepted | None:
        try:  # durable (committed) when it returns; refused whole when over the bound
            self.pipeline.ingest(spans)
        except StoreFull as exc:
            if (
                exc.adding.traces > self.settings.max_pending_traces
                or exc.adding.bytes > self.settings.max_pending_bytes
            ):
                raise RequestTooLarge(
                    f"the request alone exceeds the evaluator's bound: {exc}"
                ) from None
            raise ReceiverBusy(f"evaluator full: {exc}", retry_after=1.0) from None
        self._wake.set()
        self.workers.wake()
        return None

    def _other_signal(self, path: str, content_type: str, encoding: str, body: bytes) -> None:
        """Metrics and logs from the app: forwarded; GenAI content log events also read."""
        if self._forward is not None:
            self._forward(path, content_type, encoding, body)
        if path == LOGS_PATH:
            spans = decode_log_events(content_type, encoding, body, self.early)
            if spans:
                self._accept(spans)

    def _run(self) -> None:
        tick = min(0.25, max(0.01, self.config.assembly.quiet_s / 4))
        while not self._stopping.is_set():
            try:
                self.workers.reap()
                self.workers.fill()
            except Exception:  # noqa: BLE001 - a store failure must not end the loop
                _log.exception("embedded evaluator: claiming due traces failed")
            # With traces in flight, wake on the next finished one (or an arrival): a fast judge
            # finishes traces while fill() is still claiming, and no arrival may follow.
            if self.workers.full or self.workers.in_flight:
                self.workers.wait(tick)
            else:
                self._wake.wait(tick)
                self._wake.clear()

    def skipped_traces(self) -> list[SkippedTrace]:
        """Every trace seen and not scored, with its reason, first skipped first."""
        return self.state.skipped.all()

    def wait_for_results(self, count: int, timeout_s: float) -> list[ScoredResult]:
        """Block until the results table holds at least ``count`` rows (or the timeout); returns
        them, oldest first."""
        return self.sink.wait_for_results(count, timeout_s)
