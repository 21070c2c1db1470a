"""Values that flow between the service's rooms, and every seam the rooms talk through.

Rooms (``intake`` → ``scoring`` → ``stores`` → ``writeback``, run by ``runtime``) exchange these
types only: a span (:class:`SpanRecord`), the RAG view of an assembled trace (:class:`RagTrace`),
a sampling decision, the scores of one trace (:class:`TraceScores`). The Kafka consumer
(``ragtrace consume``) and the embedded evaluator (``ragtrace serve``) run the same steps over
them; they differ only in which implementation sits behind each seam (Redis or in-process and
SQLite stores; spans from Kafka or from an OTLP/HTTP receiver).

Seams: :class:`Admission` (intake: which traces are decoded at all), :class:`TraceSampler`
(scoring: which scores an assembled trace gets), the stores (:class:`TraceStore`,
:class:`LabelStore`, :class:`JudgeResultCache`, :class:`IdempotencyStore`, :class:`JudgeBudget`,
:class:`BatchStore`, :class:`SessionEvidence`, :class:`SkipLog`; :class:`LabelSet`, the label
store the web view adds to), :class:`LabelLookup` (what matching a trace to its labelled question
needs) and :class:`ScoreSink` (write-back). Beside them, the vocabulary their implementations
share, so that no store needs scoring code: the trace store's counters and dead traces
(:data:`STORE_STATS`, :class:`DeadTrace`, :func:`group_by_trace`), the label index and the
storage form of a labelled question (:class:`LabelIndex`, :class:`LabelStats`,
:func:`question_to_json`, :func:`question_version`) and the record of a trace not scored
(:class:`SkippedTrace`).

Each store seam declares its per-item methods and the batched forms the pipeline calls
(``load_many``, ``release_many``, ``written_many``, ``mark_written_many``, ``get_many``,
``put_many``): the same results as one call per item, in input order, in one round trip where the
backing store allows it. Every store (in-memory, Redis, SQLite) implements both.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ragtrace.evaluation.attribution import Cell
from ragtrace.evaluation.judges import GroundednessResult, MetricResult
from ragtrace.evaluation.labels import LabelledQuestion, label_set_version
from ragtrace.evaluation.retrieval import QuestionScores, RecallDefinition
from ragtrace.normalize import question_sha256
from ragtrace_consumers.errors import WriteBackError

__all__ = [
    "EMPTY_QUESTION_SHA256",
    "FAMILY_ANSWER",
    "FAMILY_GROUNDEDNESS",
    "FAMILY_RECALL",
    "METRIC_CORRECTNESS",
    "METRIC_RELEVANCY",
    "REFERENCE_FROM_LABEL",
    "REFERENCE_FROM_SPAN",
    "SKIP_REASONS",
    "STORE_STATS",
    "Admission",
    "AnswerScores",
    "AttributeValue",
    "BatchStore",
    "Chunk",
    "DeadTrace",
    "IdempotencyStore",
    "JudgeBudget",
    "JudgeResultCache",
    "LabelIndex",
    "LabelLookup",
    "LabelSet",
    "LabelStats",
    "LabelStore",
    "Lease",
    "RagTrace",
    "RetrievalScores",
    "RetrievalStep",
    "SamplingDecision",
    "ScoreSink",
    "SessionEvidence",
    "SessionTurn",
    "SkipLog",
    "SkippedTrace",
    "SpanRecord",
    "TraceSampler",
    "TraceScores",
    "TraceStore",
    "group_by_trace",
    "question_from_json",
    "question_to_json",
    "question_version",
    "recent_turns",
]

AttributeValue = (
    str | bool | int | float | Sequence[str] | Sequence[bool] | Sequence[int] | Sequence[float]
)


@dataclass(frozen=True)
class SpanRecord:
    """One finished span as decoded from OTLP, independent of the wire format.

    IDs are lower-case hex (32 characters for the trace, 16 for spans); ``parent_span_id`` is
    ``None`` for a trace's root. ``scope`` is the instrumentation scope name (``scope_version``
    its version, ``""`` when unset) and ``service`` the resource's ``service.name``
    (``"unknown_service"`` when absent).
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    scope: str
    service: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    status_error: bool = False
    scope_version: str = ""

    def __post_init__(self) -> None:
        if len(self.trace_id) != 32 or len(self.span_id) != 16:
            raise ValueError(f"bad span IDs: trace {self.trace_id!r}, span {self.span_id!r}")


@dataclass(frozen=True)
class Chunk:
    """A retrieved or supplied context document: its ID, its text when captured, its score.

    ``hashed`` marks an ID made from the text's SHA-256 because the span carried no ID (neither
    the dialect's ID field nor a document-metadata key): such an ID can never equal a labelled
    gold ID, so recall against gold IDs is not computed for it (n/a with a reason, never 0.0).

    ``turn`` is the trace ID of the earlier turn of the same session that retrieved this chunk
    (context carried over from the conversation, :class:`SessionEvidence`); None for the
    trace's own evidence.
    """

    id: str
    text: str | None = None
    score: float | None = None
    hashed: bool = False
    turn: str | None = None


@dataclass(frozen=True)
class RetrievalStep:
    """One retrieval the answer drew on: a retriever span, or a tool call that returned
    documents. ``query`` is the step's own (an agent's sub-query, not necessarily the user's
    question); ``chunks`` its ranked documents; ``tool`` the tool's name for a tool call (None:
    a retriever span); ``top_k`` the cut-off the span declares (``gen_ai.retrieval.top_k``, or
    ``gen_ai.request.top_k`` on a retrieval span), None when it declares none."""

    span_id: str
    query: str | None = None
    chunks: tuple[Chunk, ...] = ()
    tool: str | None = None
    top_k: int | None = None

    @property
    def kind(self) -> str:
        """``tool`` for a tool call, ``retriever`` otherwise."""
        return "tool" if self.tool is not None else "retriever"

    def summary(self) -> dict[str, object]:
        """Plain data (span ID, kind, tool, query, declared top-k, ranked IDs) for results and
        ``inspect``."""
        return {
            "span_id": self.span_id,
            "kind": self.kind,
            "tool": self.tool,
            "query": self.query,
            "top_k": self.top_k,
            "ids": [c.id for c in self.chunks],
        }


@dataclass(frozen=True)
class RagTrace:
    """The RAG view of one assembled trace: everything scoring needs and nothing else.

    ``steps`` are the retrievals the answer drew on, in start order, each with its own query and
    ranked documents; ``retrieved`` is their union in first-appearance order (recall@k pools
    each step's top k, :func:`ragtrace.evaluation.retrieval.score_steps`). ``query`` is the
    user's question (with tool-call steps: the request's or the generation's user message, not
    a step's sub-query). ``context`` is what the answer is judged against: what the generation
    span says it supplied (falling back to ``retrieved`` when it says nothing), with the tool
    results and system-message context the model was given. ``target_span_id``
    is the span evaluation results are parented to: the pipeline/root span when there is one,
    else the generation span, else the retrieval span. ``retrieval_span_id`` and
    ``generation_span_id`` are the spans each metric evaluates (recall → the first retrieval
    span with documents, groundedness → the generation span that carried the answer), and
    ``response_id`` that generation's ``gen_ai.response.id`` when it has one.

    ``recall_na_reason`` says why recall against gold IDs cannot be computed although documents
    were retrieved (their IDs are content hashes); ``answer_na_reason`` why no answer text could
    be extracted from a generation span that has an output. Both are None when nothing is wrong.
    """

    trace_id: str
    service: str
    target_span_id: str
    pipeline: str | None = None
    query: str | None = None
    query_sha256: str | None = None
    question_id: str | None = None
    retrieved: tuple[Chunk, ...] = ()
    context: tuple[Chunk, ...] = ()
    answer: str | None = None
    model: str | None = None
    data_source: str | None = None
    """The retrieval span's ``gen_ai.data_source.id`` (which index or store answered)."""
    attributes: Mapping[str, str] = field(default_factory=dict)
    context_truncated: bool = False
    has_retrieval: bool = False
    has_generation: bool = False
    ended_ns: int = 0
    retrieval_span_id: str | None = None
    generation_span_id: str | None = None
    response_id: str | None = None
    recall_na_reason: str | None = None
    answer_na_reason: str | None = None
    reference_answer: str | None = None
    root_span_id: str | None = None
    """The trace's root span (no parent), when it was among the spans: where the headline
    (the cell) is shown, since trace views list root spans."""
    """``ragtrace.reference_answer`` from any span of the trace (the app's own reference)."""
    session_id: str | None = None
    """The conversation this turn belongs to: OpenInference ``session.id`` or GenAI
    ``gen_ai.conversation.id`` on any span of the trace (None: a standalone request)."""
    context_source: str | None = None
    """Where ``context`` came from (:data:`ragtrace.semconv.EVAL_CONTEXT_SOURCE`'s values);
    None when there is none."""
    steps: tuple[RetrievalStep, ...] = ()
    context_sources: tuple[str, ...] = ()
    """Every source ``context`` drew from, in order (:data:`ragtrace.semconv.EVAL_CONTEXT_SOURCES`'s
    values); ``context_source`` is the first."""


@dataclass(frozen=True)
class Lease:
    """One claim of a trace: its ID and the token that proves the claim is still current."""

    trace_id: str
    token: str


class TraceStore(Protocol):
    """Holds the spans of traces still being assembled, shared by every replica.

    ``append`` is durable when it returns: after it, the Kafka offsets of those spans may be
    committed. ``claim`` hands each due trace to exactly one caller for ``lease_s`` seconds, with
    a fresh token; a trace whose lease runs out (its claimant died or was too slow) becomes due
    again and the next claim gets a new token. ``release`` and ``park`` act only for the current
    token and return whether they did: a claimant whose lease was taken over can never delete or
    reschedule the new claimant's work. (``token=None`` acts unconditionally, for tools; the
    stores also keep ``claim_due``, a claim returning bare trace IDs for such tools, which is
    not part of this seam.)

    ``append``'s ``creates`` names the traces whose spans may start a new entry (their spans
    hold a RAG span, as the caller's readers read them); other spans only join a trace already
    stored. The stores never read spans themselves: tools and tests name them with
    :func:`~ragtrace_consumers.readers.creates_trace` (the default readers' rule).
    """

    def append(
        self,
        spans: Sequence[SpanRecord],
        due_at: Mapping[str, float],
        creates: Collection[str],
    ) -> None: ...

    def claim(self, now: float, limit: int, lease_s: float) -> list[Lease]: ...

    def load(self, trace_id: str) -> list[SpanRecord]: ...

    def load_many(self, trace_ids: Sequence[str]) -> list[list[SpanRecord]]:
        """:meth:`load` for each ID (an empty list for a trace no longer stored)."""
        ...

    def release(self, trace_id: str, token: str | None = None) -> bool: ...

    def release_many(self, leases: Sequence[tuple[str, str | None]]) -> list[bool]:
        """:meth:`release` for each (trace ID, token) pair."""
        ...

    def park(
        self, trace_id: str, retry_at: float, reason: str, token: str | None = None
    ) -> bool: ...


# --- the trace store's vocabulary ---

STORE_STATS: tuple[str, ...] = (
    "spans_appended",  # spans stored
    "traces_created",  # new trace entries
    "late_spans",  # spans arriving while their trace was leased, or after it was scored/dead
    "lease_expired",  # leases that ran out (claimant died or was too slow): trace due again
    "expired",  # due or parked traces whose spans had expired (TTL) before they were claimed
    "parked",  # park() calls that rescheduled a trace
    "dead",  # traces given up after max_attempts parks (kept in the dead set)
    "released",  # traces scored and deleted
    "lease_lost",  # release/park by a claimant whose lease had run out and moved on: ignored
)
"""Counters every TraceStore implementation keeps (``stats()``), cumulative since creation."""


@dataclass(frozen=True)
class DeadTrace:
    """A trace given up after ``attempts`` parks; its spans are kept for inspection."""

    trace_id: str
    attempts: int
    reason: str
    at: float

    def __post_init__(self) -> None:
        if self.attempts < 0:
            raise ValueError(f"attempts must be >= 0, got {self.attempts}")


def group_by_trace(spans: Iterable[SpanRecord]) -> dict[str, list[SpanRecord]]:
    """Spans grouped by trace ID, each group in input order."""
    groups: dict[str, list[SpanRecord]] = {}
    for span in spans:
        groups.setdefault(span.trace_id, []).append(span)
    return groups


# --- labelled questions: the label stores' lookups, index and storage form ---

EMPTY_QUESTION_SHA256 = question_sha256("")
"""The digest of a question that normalises to nothing: never matched by text."""


@dataclass(frozen=True)
class LabelStats:
    """What ``ragtrace labels stats`` prints about the loaded label set (version None: none)."""

    version: str | None
    questions: int = 0
    answerable: int = 0
    ambiguous: int = 0
    loaded_at: float | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        if min(self.questions, self.answerable, self.ambiguous) < 0:
            raise ValueError("label counts must be >= 0")

    def to_dict(self) -> dict[str, object]:
        return {
            "version": self.version,
            "questions": self.questions,
            "answerable": self.answerable,
            "ambiguous": self.ambiguous,
            "loaded_at": self.loaded_at,
            "source": self.source,
        }


@dataclass(frozen=True)
class LabelIndex:
    """A label set ready for lookups: by qid, by normalised-question digest, and its version."""

    by_id: Mapping[str, LabelledQuestion]
    by_sha256: Mapping[str, str]  # digest -> qid, unambiguous digests only
    ambiguous: frozenset[str]  # digests shared by two or more questions
    version: str

    @classmethod
    def build(cls, questions: Sequence[LabelledQuestion]) -> LabelIndex:
        """Index ``questions``; a duplicate qid raises ValueError naming it."""
        by_id: dict[str, LabelledQuestion] = {}
        owners: dict[str, list[str]] = {}
        for q in questions:
            if q.qid in by_id:
                raise ValueError(f"duplicate qid {q.qid!r} in the label set")
            by_id[q.qid] = q
            digest = q.question_sha256
            if digest != EMPTY_QUESTION_SHA256:
                owners.setdefault(digest, []).append(q.qid)
        by_sha = {d: qids[0] for d, qids in owners.items() if len(qids) == 1}
        ambiguous = frozenset(d for d, qids in owners.items() if len(qids) > 1)
        return cls(by_id, by_sha, ambiguous, label_set_version(list(questions)))

    def stats(self, *, loaded_at: float | None = None, source: str | None = None) -> LabelStats:
        return LabelStats(
            version=self.version,
            questions=len(self.by_id),
            answerable=sum(1 for q in self.by_id.values() if q.gold),
            ambiguous=sum(1 for q in self.by_id.values() if q.question_sha256 in self.ambiguous),
            loaded_at=loaded_at,
            source=source,
        )


class LabelLookup(Protocol):
    """The two lookups matching needs (a label store, or the pipeline's indexed view of one)."""

    def by_id(self, qid: str) -> object | None: ...

    def by_question_sha256(self, digest: str) -> object | None: ...


class LabelStore(Protocol):
    """Labelled questions, looked up by explicit ID or by normalised-question SHA-256."""

    def by_id(self, qid: str) -> object | None: ...

    def by_question_sha256(self, digest: str) -> object | None: ...

    def version(self) -> str: ...

    def questions(self) -> Sequence[LabelledQuestion]:
        """Every labelled question of the current version (the pipeline indexes them itself)."""
        ...


class LabelSet(Protocol):
    """The label store the web view writes to: the embedded SQLite one or Redis's. ``add``
    replaces the set atomically with ``question`` added (by qid) and returns its version.

    Optimistic concurrency: with ``replaces`` (the :func:`question_version` the caller read;
    ``""``: it read no label for the qid) ``add`` raises
    :class:`~ragtrace_consumers.errors.LabelConflict` instead of writing when the qid's label is
    not that version now; None writes whatever is there. ``labelled_at`` is when the qid's label
    was last saved through ``add`` (None: it came from a labels file, or is unknown)."""

    def questions(self) -> list[LabelledQuestion]: ...

    def version(self) -> str: ...

    def by_id(self, qid: str) -> LabelledQuestion | None: ...

    def by_question_sha256(self, digest: str) -> LabelledQuestion | None: ...

    def labelled_at(self, qid: str) -> float | None: ...

    def add(
        self,
        question: LabelledQuestion,
        *,
        trace_id: str | None = None,
        replaces: str | None = None,
    ) -> str: ...


def question_to_json(q: LabelledQuestion) -> str:
    """The storage form of one labelled question (the labels file's line format)."""
    d: dict[str, object] = {"qid": q.qid, "question": q.question, "gold": sorted(q.gold)}
    if q.reference_answer is not None:
        d["reference_answer"] = q.reference_answer
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def question_version(q: LabelledQuestion | None) -> str:
    """One labelled question's version: a short hash of its stored form (``""``: no label).
    Unlike the set's version it changes only when this question does, so a form that read it
    conflicts only with a change to the question it shows."""
    if q is None:
        return ""
    return hashlib.sha256(question_to_json(q).encode("utf-8")).hexdigest()[:16]


def question_from_json(raw: str | bytes) -> LabelledQuestion:
    d = json.loads(raw)
    return LabelledQuestion(
        qid=d["qid"],
        question=d["question"],
        gold=frozenset(d["gold"]),
        reference_answer=d.get("reference_answer"),
    )


class JudgeResultCache(Protocol):
    """Judge results keyed by (answer, context, judge model, prompt hash) digests."""

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, value: bytes) -> None: ...

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None: ...


class IdempotencyStore(Protocol):
    """Remembers which (trace, metric) scores were already written back (and, under
    ``counted:<family>`` names, whose metrics were already counted)."""

    def written(self, trace_id: str, metric: str) -> bool: ...

    def mark_written(self, trace_id: str, metric: str) -> None: ...

    def written_many(self, keys: Sequence[tuple[str, str]]) -> list[bool]: ...

    def mark_written_many(self, keys: Sequence[tuple[str, str]]) -> None: ...


class JudgeBudget(Protocol):
    """Judge calls and tokens per minute, shared by every replica; never exceeded."""

    def try_acquire(self, calls: int, tokens: int) -> bool: ...


# --- scores: what is written back for one trace ---

FAMILY_RECALL = "recall"
"""Idempotency name of the retrieval metrics (recall, hit rate, precision, RR, nDCG), written
together."""
FAMILY_GROUNDEDNESS = "groundedness"


@dataclass(frozen=True)
class RetrievalScores:
    """Retrieval metrics of one trace against the labelled question it matched."""

    question_id: str
    matched_by: str
    labels_version: str
    definition: RecallDefinition
    scores: QuestionScores
    context_relevancy: float | None = None
    gold_positions: tuple[int, ...] = ()
    """0-based positions in the trace's retrieved list whose chunk is gold (every position,
    not only the top k): what Phoenix's per-document annotations show."""
    step_recall: tuple[float, ...] = ()
    """With several retrieval steps: each step's own recall@k (per ``definition``), in the
    order of the trace's steps that returned documents; empty with one step."""
    step_k: tuple[int, ...] = ()
    """Each of those steps' recall cut-off (its declared top-k, or the configured k); empty
    with one step (``scores.k`` is its cut-off)."""
    k_declared: bool = False
    """True when a retrieval span's declared top-k set a cut-off (else every one is the
    configured ``scoring.k``)."""

    def __post_init__(self) -> None:
        if self.matched_by not in ("question_id", "query_text"):
            raise ValueError(f"matched_by must be question_id or query_text: {self.matched_by!r}")

    @property
    def answerable(self) -> bool:
        """False for an unanswerable question (empty gold set): every metric is NaN."""
        return not math.isnan(self.scores.recall)

    @property
    def headline(self) -> float:
        """The recall the attribution cell uses, per the configured definition."""
        if self.definition is RecallDefinition.HIT_RATE:
            return self.scores.hit_rate
        return self.scores.recall


@dataclass(frozen=True)
class TraceScores:
    """Everything written back for one trace. ``retrieval``/``groundedness``/``answers`` are None
    when that family is not (or no longer) to be written; ``cell`` uses retrieval and
    groundedness whenever they are known (the answer metrics do not move it)."""

    trace: RagTrace
    retrieval: RetrievalScores | None
    groundedness: GroundednessResult | None
    cell: Cell
    groundedness_cost_usd: float = 0.0
    answers: AnswerScores | None = None
    earlier_turn_units: Mapping[int, str] = field(default_factory=dict)
    """Answer unit ID -> the earlier turn of the session (trace ID) whose evidence alone
    supports it (:mod:`ragtrace_consumers.scoring.sessions`); empty without such support."""
    grounded: bool | None = None
    """Whether the answer's groundedness passed its threshold, whatever the cell (None: not
    judged, or the judge failed): an unlabelled or unanswerable answer has a verdict too."""

    def __post_init__(self) -> None:
        if self.retrieval is None and self.groundedness is None and self.answers is None:
            raise ValueError("TraceScores needs at least one family of scores")
        if self.groundedness_cost_usd < 0:
            raise ValueError("groundedness_cost_usd must be >= 0")

    @property
    def families(self) -> tuple[str, ...]:
        """The metric families this write covers, in a fixed order (idempotency keys)."""
        out = []
        if self.retrieval is not None:
            out.append(FAMILY_RECALL)
        if self.groundedness is not None:
            out.append(FAMILY_GROUNDEDNESS)
        if self.answers is not None:
            out.append(FAMILY_ANSWER)
        return tuple(out)


FAMILY_ANSWER = "answer"
"""Idempotency name of the answer metrics (relevancy and correctness, written together)."""
METRIC_RELEVANCY = "answer_relevancy"
METRIC_CORRECTNESS = "answer_correctness"
REFERENCE_FROM_SPAN = "span"
REFERENCE_FROM_LABEL = "label"


@dataclass(frozen=True)
class AnswerScores:
    """The answer metrics of one trace (at least one of the two) and what they were judged
    against: ``reference_source`` says where the reference answer came from (``span``: the
    trace's own ``ragtrace.reference_answer``; ``label``: the matched labelled question's);
    ``question_id`` is the labelled question the trace matched, if any; ``cost_usd`` what this
    trace paid for them (0 when another trace paid for a cached verdict).
    """

    question_id: str | None
    relevancy: MetricResult | None
    correctness: MetricResult | None
    cost_usd: float = 0.0
    reference_source: str = REFERENCE_FROM_LABEL

    def __post_init__(self) -> None:
        if self.relevancy is None and self.correctness is None:
            raise ValueError("AnswerScores needs relevancy or correctness")
        if self.reference_source not in (REFERENCE_FROM_SPAN, REFERENCE_FROM_LABEL):
            raise ValueError(f"unknown reference source {self.reference_source!r}")
        if self.reference_source == REFERENCE_FROM_LABEL and self.question_id is None:
            raise ValueError("a reference answer from a label needs its question_id")
        if self.cost_usd < 0:
            raise ValueError("AnswerScores.cost_usd must be >= 0")

    @property
    def results(self) -> tuple[MetricResult, ...]:
        """The metrics present, relevancy first."""
        return tuple(m for m in (self.relevancy, self.correctness) if m is not None)


# --- sampling decisions ---

SKIP_SAMPLED_OUT = "sampled_out"
SKIP_NO_RETRIEVAL = "no_retrieval"
SKIP_NO_GENERATION = "no_generation"
SKIP_NO_ANSWER = "no_answer"
SKIP_NO_CONTEXT = "no_context"
SKIP_CONTEXT_TEXT_MISSING = "context_text_missing"
SKIP_CONTEXT_TRUNCATED = "context_truncated"
SKIP_REASONS: frozenset[str] = frozenset(
    {
        SKIP_SAMPLED_OUT,
        SKIP_NO_RETRIEVAL,
        SKIP_NO_GENERATION,
        SKIP_NO_ANSWER,
        SKIP_NO_CONTEXT,
        SKIP_CONTEXT_TEXT_MISSING,
        SKIP_CONTEXT_TRUNCATED,
    }
)
"""Every reason a :class:`SamplingDecision` gives (the judging step adds ``budget_exhausted``)."""


@dataclass(frozen=True)
class SamplingDecision:
    """Whether to score recall and run the judge; ``reason`` says why something is skipped.

    ``reason`` is the judge's skip reason when the judge is skipped, else recall's, else None;
    ``recall_reason``/``judge_reason`` give each one. ``rule`` names the rule that applied.
    """

    recall: bool
    judge: bool
    reason: str | None = None
    recall_reason: str | None = None
    judge_reason: str | None = None
    rule: str | None = None

    def __post_init__(self) -> None:
        for ok, why in ((self.recall, self.recall_reason), (self.judge, self.judge_reason)):
            if ok == (why is not None):
                raise ValueError("a sampled step has no skip reason, a skipped step has one")
        if self.reason is None:
            object.__setattr__(self, "reason", self.judge_reason or self.recall_reason)


# --- traces seen and not scored ---


@dataclass(frozen=True)
class SkippedTrace:
    """One trace not scored: ``reason`` is the metric's bounded reason, ``detail`` a sentence
    for people."""

    trace_id: str
    service: str
    reason: str
    detail: str
    at: float

    def __post_init__(self) -> None:
        if not self.reason:
            raise ValueError("SkippedTrace.reason must not be empty")


class SkipLog(Protocol):
    """Where skipped traces are recorded; never raises into the pipeline for a full log."""

    def skipped(self, entry: SkippedTrace) -> None: ...


# --- seams of the steps ---


class Admission(Protocol):
    """Decides per trace whether its spans are decoded at all."""

    @property
    def interest(self) -> frozenset[str]:
        """The attribute keys ``admit`` may ask for."""
        ...

    def admit(
        self, trace_id: str, service: str, facts: Callable[[], Mapping[str, str]]
    ) -> bool: ...

    def admit_records(self, spans: Sequence[SpanRecord]) -> list[SpanRecord]:
        """The spans of ``spans`` whose traces are kept (spans not decoded from a trace
        request: the GenAI log events turned into spans)."""
        ...

    def maybe_flush(self) -> None: ...

    def flush(self) -> None: ...


class TraceSampler(Protocol):
    """Decides which scores an assembled trace gets (implemented by
    :class:`ragtrace_consumers.scoring.sampling.Sampler`); stateless and thread-safe."""

    def decide(self, trace: RagTrace) -> SamplingDecision: ...


class ScoreSink(Protocol):
    """Where scores go. ``write`` returns only once the span is delivered (durable enough to
    record the idempotency keys); it raises :class:`WriteBackError` otherwise. ``write_many``
    delivers a batch (together where the sink can) and reports per item, in input order, None
    (delivered) or the :class:`WriteBackError`; it raises only for a failure of the whole call."""

    def write(self, scores: TraceScores) -> None: ...

    def write_many(self, batch: Sequence[TraceScores]) -> list[WriteBackError | None]: ...

    def shutdown(self) -> None: ...


@dataclass(frozen=True)
class SessionTurn:
    """The evidence one turn of a conversation was given: its trace, when it ended, and its
    own context chunks (with their texts; chunks carried over from earlier turns are not
    repeated)."""

    trace_id: str
    ended_ns: int
    chunks: tuple[Chunk, ...]


class SessionEvidence(Protocol):
    """The evidence of a session's recent turns, shared by every replica, so that a follow-up
    turn is judged against what an earlier turn retrieved.

    ``record_many`` keeps each ``(session_id, turn)`` (a turn recorded twice is kept once);
    ``recent_many`` returns, per ``(session_id, before_ns)``, the turns of that session that
    ended before ``before_ns`` and at most ``max_age_s`` earlier, newest first, at most
    ``max_turns`` of them. A store keeps no more than that bound needs: turns older than the
    age or beyond the count may be forgotten at any time."""

    def record_many(self, turns: Sequence[tuple[str, SessionTurn]]) -> None: ...

    def recent_many(
        self, queries: Sequence[tuple[str, int]], max_turns: int, max_age_s: float
    ) -> list[list[SessionTurn]]: ...


def recent_turns(
    turns: Sequence[SessionTurn], before_ns: int, max_turns: int, max_age_s: float
) -> list[SessionTurn]:
    """The :meth:`SessionEvidence.recent_many` rule over one session's
    turns (any order): ended before ``before_ns``, at most ``max_age_s`` earlier, newest first,
    at most ``max_turns``."""
    oldest = before_ns - int(max_age_s * 1e9)
    picked = sorted(
        (t for t in turns if oldest <= t.ended_ns < before_ns),
        key=lambda t: t.ended_ns,
        reverse=True,
    )
    return picked[:max_turns]


class BatchStore(Protocol):
    """Submitted batches and their requests, shared by replicas and kept across restarts."""

    def add_batch(self, batch_id: str, items: Mapping[str, bytes]) -> None: ...

    def pending_batches(self) -> list[str]: ...

    def batch_items(self, batch_id: str) -> dict[str, bytes]: ...

    def submitted(self, custom_ids: Sequence[str]) -> list[bool]: ...

    def finish_batch(self, batch_id: str) -> None: ...
