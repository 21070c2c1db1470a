"""The bundled demo RAG application: a support bot over a tiny product-documentation corpus.

It is instrumented exactly as a user's application would be — the real ``@ragtrace.retrieve``,
``@ragtrace.generate`` and ``@ragtrace.pipeline`` decorators, spans exported by
``ragtrace.configure`` over OTLP/HTTP — so the embedded evaluator scores it through the same path
as any application.

Retrieval is :class:`~ragtrace_consumers.demo.retriever.LexicalRetriever` over ``corpus.jsonl``. Generation
is a deterministic template "generator": ``questions.jsonl`` scripts the answer to each question,
so every run produces the same spans and the same scores. Two scripted answers reproduce the
escalations of the groundedness chapter:

* the audit-log question about the Team plan is answered faithfully from the Enterprise passage
  (c-9930) — grounded, but retrieval never found the Team passage;
* the /v1/exports answer contradicts the passage ranked first — retrieved, but not grounded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from opentelemetry import trace

import ragtrace
from ragtrace_consumers.demo.retriever import LexicalRetriever, Passage, load_corpus

__all__ = ["TOP_K", "DemoApp", "ScriptedQuestion", "load_script"]

TOP_K = 3
"""Passages retrieved per question (and the k of recall@k in the demo)."""
_MODEL = "demo-template-generator"


@dataclass(frozen=True)
class ScriptedQuestion:
    """A question the demo asks and the answer its generator gives to it."""

    question: str
    answer: str

    def __post_init__(self) -> None:
        if not self.question.strip() or not self.answer.strip():
            raise ValueError(f"a scripted question needs a question and an answer: {self!r}")


def load_script() -> list[ScriptedQuestion]:
    """The bundled ``questions.jsonl``, in order."""
    raw = resources.files("ragtrace_consumers.demo").joinpath("questions.jsonl").read_text("utf-8")
    out = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if line.strip():
            try:
                obj = json.loads(line)
                out.append(ScriptedQuestion(str(obj["question"]), str(obj["answer"])))
            except (ValueError, KeyError) as exc:
                raise ValueError(
                    f"consumers/ragtrace_consumers/demo/questions.jsonl, line {number}: {exc}"
                ) from None
    return out


class DemoApp:
    """Answers the scripted questions: retrieve the top :data:`TOP_K`, then generate."""

    def __init__(
        self,
        passages: Sequence[Passage] | None = None,
        script: Sequence[ScriptedQuestion] | None = None,
    ) -> None:
        self._retriever = LexicalRetriever(passages if passages is not None else load_corpus())
        script = load_script() if script is None else script
        self._answers = {q.question: q.answer for q in script}
        self.last_trace_id: str | None = None
        self.last_retrieved: tuple[str, ...] = ()

    @ragtrace.retrieve(top_k=TOP_K, data_source="lumen-docs")
    def retrieve(self, query: str) -> list[dict[str, object]]:
        found = self._retriever.search(query, TOP_K)
        self.last_retrieved = tuple(p.id for p, _ in found)
        return [{"id": p.id, "text": p.text, "score": score} for p, score in found]

    @ragtrace.generate(model=_MODEL)
    def generate(self, query: str, context: list[dict[str, object]]) -> str:
        try:
            return self._answers[query]
        except KeyError:
            raise LookupError(f"the demo generator has no scripted answer for {query!r}") from None

    @ragtrace.pipeline(name="support-bot")
    def answer(self, query: str) -> str:
        """Answer ``query``; :attr:`last_trace_id` and :attr:`last_retrieved` then describe it."""
        self.last_trace_id = format(trace.get_current_span().get_span_context().trace_id, "032x")
        return self.generate(query, self.retrieve(query))
