"""The scoring path's one redaction seam: a trace's texts redacted before a judge or a sink.

:class:`TraceRedaction` applies a :class:`~ragtrace.evaluation.redaction.Redactor` to one
planned trace — its query, every retrieved and supplied passage, each retrieval step's query and
passages, its answer and reference answer,
and the answer-metrics job made from them (whose reference may come from the labels) — in one
:class:`~ragtrace.evaluation.redaction.RedactionSession`, so a value gets the same placeholder
wherever it appears and groundedness is judged exactly as before. The pipeline calls it after
label matching and retrieval scoring (which read the original query) and before any judge job
is made: the judges, the judge cache, the batch requests and every sink see only redacted text.
Each replacement is counted on ``ragtrace.redactions`` by pattern (every pattern in force is
exported, at 0 when it replaced nothing, so its series exists from the first trace).
"""

from __future__ import annotations

from dataclasses import replace

from ragtrace.evaluation.redaction import RedactionSession, Redactor
from ragtrace_consumers.model import Chunk, RagTrace
from ragtrace_consumers.scoring.answer_judging import AnswerJob
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics

__all__ = ["TraceRedaction"]


class TraceRedaction:
    """``redaction(trace, answers)``: both redacted in one session, the counts recorded."""

    def __init__(self, redactor: Redactor, metrics: ConsumerMetrics) -> None:
        self.redactor = redactor
        self._metrics = metrics

    def __call__(
        self, trace: RagTrace, answers: AnswerJob | None
    ) -> tuple[RagTrace, AnswerJob | None]:
        session = self.redactor.session()
        query = session.redact_optional(trace.query)  # first: the numbering follows the trace
        retrieved = _chunks(session, trace.retrieved)
        # The context usually is the retrieved list itself: redacted (and counted) once.
        context = retrieved if trace.context == trace.retrieved else _chunks(session, trace.context)
        # A step's query and passages are mostly the trace's own: redacted (and counted) once.
        done = dict(zip(trace.retrieved, retrieved, strict=True))
        steps = tuple(
            replace(
                s,
                query=query if s.query == trace.query else session.redact_optional(s.query),
                chunks=tuple(done.get(c) or _chunks(session, (c,))[0] for c in s.chunks),
            )
            for s in trace.steps
        )
        redacted = replace(
            trace,
            query=query,
            retrieved=retrieved,
            context=context,
            steps=steps,
            answer=session.redact_optional(trace.answer),
            reference_answer=session.redact_optional(trace.reference_answer),
        )
        if answers is not None:
            answers = replace(
                answers,
                question=session.redact_optional(answers.question),
                answer=session.redact(answers.answer),
                reference=session.redact(answers.reference),
            )
        for pattern in self.redactor.names:  # 0 too: a panel's increase() needs the series
            self._metrics.redacted(pattern, session.counts.get(pattern, 0), trace.service)
        return redacted, answers


def _chunks(session: RedactionSession, chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    return tuple(replace(c, text=session.redact_optional(c.text)) for c in chunks)
