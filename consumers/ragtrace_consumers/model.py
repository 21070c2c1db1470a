"""Values that flow between the consumer steps, and the small seams the steps talk through.

The Kafka consumer (``ragtrace consume``) and the embedded evaluator (``ragtrace serve``) run the
same steps over these types; they differ only in which implementation sits behind each seam
(Redis or in-process/SQLite) and where spans come from (Kafka or an OTLP/HTTP receiver).

Each seam declares its per-item methods and the batched forms the pipeline calls
(``load_many``, ``release_many``, ``written_many``, ``mark_written_many``, ``get_many``,
``put_many``): the same results as one call per item, in input order, in one round trip where the
backing store allows it. Every store (in-memory, Redis, SQLite) implements both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ragtrace.evaluation.labels import LabelledQuestion

__all__ = [
    "AttributeValue",
    "Chunk",
    "IdempotencyStore",
    "JudgeBudget",
    "JudgeResultCache",
    "LabelStore",
    "Lease",
    "RagTrace",
    "SpanRecord",
    "TraceStore",
]

AttributeValue = (
    str | bool | int | float | Sequence[str] | Sequence[bool] | Sequence[int] | Sequence[float]
)


@dataclass(frozen=True)
class SpanRecord:
    """One finished span as decoded from OTLP, independent of the wire format.

    IDs are lower-case hex (32 characters for the trace, 16 for spans); ``parent_span_id`` is
    ``None`` for a trace's root. ``scope`` is the instrumentation scope name and ``service`` the
    resource's ``service.name`` (``"unknown_service"`` when absent).
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

    def __post_init__(self) -> None:
        if len(self.trace_id) != 32 or len(self.span_id) != 16:
            raise ValueError(f"bad span IDs: trace {self.trace_id!r}, span {self.span_id!r}")


@dataclass(frozen=True)
class Chunk:
    """A retrieved or supplied context document: its ID, its text when captured, its score.

    ``hashed`` marks an ID made from the text's SHA-256 because the span carried no ID (neither
    the dialect's ID field nor a document-metadata key): such an ID can never equal a labelled
    gold ID, so recall against gold IDs is not computed for it (n/a with a reason, never 0.0).
    """

    id: str
    text: str | None = None
    score: float | None = None
    hashed: bool = False


@dataclass(frozen=True)
class RagTrace:
    """The RAG view of one assembled trace: everything scoring needs and nothing else.

    ``retrieved`` is the ranked list from the retrieval span(s); ``context`` is what the generation
    span says it supplied (falling back to ``retrieved`` when it says nothing). ``target_span_id``
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
    """``ragtrace.reference_answer`` from any span of the trace (the app's own reference)."""


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
    """

    def append(self, spans: Sequence[SpanRecord], due_at: Mapping[str, float]) -> None: ...

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


class LabelStore(Protocol):
    """Labelled questions, looked up by explicit ID or by normalised-question SHA-256."""

    def by_id(self, qid: str) -> object | None: ...

    def by_question_sha256(self, digest: str) -> object | None: ...

    def version(self) -> str: ...

    def questions(self) -> Sequence[LabelledQuestion]:
        """Every labelled question of the current version (the pipeline indexes them itself)."""
        ...


class JudgeResultCache(Protocol):
    """Judge results keyed by (answer, context, judge model, prompt hash) digests."""

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, value: bytes) -> None: ...

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None: ...


class IdempotencyStore(Protocol):
    """Remembers which (trace, metric) scores were already written back."""

    def written(self, trace_id: str, metric: str) -> bool: ...

    def mark_written(self, trace_id: str, metric: str) -> None: ...

    def written_many(self, keys: Sequence[tuple[str, str]]) -> list[bool]: ...

    def mark_written_many(self, keys: Sequence[tuple[str, str]]) -> None: ...


class JudgeBudget(Protocol):
    """Judge calls and tokens per minute, shared by every replica; never exceeded."""

    def try_acquire(self, calls: int, tokens: int) -> bool: ...
