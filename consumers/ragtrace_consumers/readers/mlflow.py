"""MLflow Tracing (``mlflow-tracing`` 3.x, exported over OTLP: instrumentation scope
``mlflow.tracing.provider``).

MLflow stores every value of its own attributes as JSON (a span type ``RETRIEVER`` arrives as
``"\\"RETRIEVER\\""``). ``mlflow.spanType`` makes the roles:

* ``RETRIEVER`` is a retrieval: the query from ``mlflow.spanInputs`` (a string, or the
  function's arguments by name: :func:`~ragtrace_consumers.readers._reading.query_in`), the
  ranked documents from ``mlflow.spanOutputs`` — MLflow's ``Document``
  ``{"page_content", "metadata", "id"}``: the document's own ``id``, else a metadata ID key; a
  score in the metadata (LlamaIndex's, or the app's) is the document's score;
* ``TOOL`` is a tool call (:meth:`~ragtrace_consumers.readers._reading.DocumentReader.tool_call`,
  the tool's name the span's): a retrieval step when its output holds chunk-like documents or
  the tool is a configured retrieval tool, else ignored;
* ``LLM`` / ``CHAT_MODEL`` (``mlflow.openai.autolog()`` and the other autologgers) is a
  generation: the answer unwrapped from ``mlflow.spanOutputs`` (an OpenAI ``ChatCompletion``),
  the messages it was given from ``mlflow.spanInputs`` ``messages`` (system and developer
  messages as its instructions, ``tool`` messages as its tool results), the model from
  ``mlflow.llm.model``; one whose output stopped to call tools (a choice's ``finish_reason``
  ``tool_calls``, Anthropic's ``stop_reason`` ``tool_use``) is an agent's intermediate step:
  it ``continues``, with no answer;
* the root span of any other type (``@mlflow.trace`` on the app's entry point: ``UNKNOWN``,
  ``CHAIN``, ``AGENT``) is the pipeline, its question from its inputs; every other span
  (embedding, parser, reranker, inner chains) is ignored.

MLflow's GenAI export (``MLFLOW_ENABLE_OTEL_GENAI_SEMCONV``) carries no ``mlflow.*`` attribute:
its spans are the GenAI reader's (:mod:`.genai`); it drops the retrieved documents.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragtrace_consumers.model import AttributeValue, SpanRecord
from ragtrace_consumers.readers._reading import (
    DocumentReader,
    Role,
    SpanReading,
    asks_for_tools,
    instruction_chunks,
    json_or_none,
    prompt_chunks,
    query_in,
    text_attr,
)
from ragtrace_consumers.readers.answers import extract_answer
from ragtrace_consumers.readers.tool_results import message_tool_results

__all__ = ["MlflowReader", "SPAN_TYPE", "SPAN_INPUTS", "SPAN_OUTPUTS"]

SPAN_TYPE = "mlflow.spanType"
SPAN_INPUTS = "mlflow.spanInputs"
SPAN_OUTPUTS = "mlflow.spanOutputs"
_MODEL = "mlflow.llm.model"
_GENERATIONS = frozenset({"LLM", "CHAT_MODEL"})
_INSTRUCTION_ROLES = frozenset({"system", "developer"})


def _value(attrs: Mapping[str, AttributeValue], key: str) -> object | None:
    """An MLflow attribute's value: its JSON decoded (a bare string kept as it is)."""
    raw = text_attr(attrs, key)
    parsed = json_or_none(raw)
    return raw if parsed is None else parsed


def _documents(value: object) -> object:
    """MLflow ``Document``s with a metadata score lifted to the document (the rest as is)."""
    if not isinstance(value, list):
        return value
    out: list[object] = []
    for item in value:
        if isinstance(item, Mapping) and "score" not in item:
            meta = item.get("metadata")
            if isinstance(meta, Mapping) and "score" in meta:
                item = {**item, "score": meta["score"]}
        out.append(item)
    return out


def _messages(inputs: object) -> list[tuple[str, str]]:
    """``(role, text)`` of the chat messages in an LLM span's inputs (text content only)."""
    messages = inputs.get("messages") if isinstance(inputs, Mapping) else None
    out: list[tuple[str, str]] = []
    for m in messages if isinstance(messages, list) else ():
        if not isinstance(m, Mapping):
            continue
        content = m.get("content")
        if isinstance(content, list):  # content parts
            content = "\n".join(
                str(p["text"]) for p in content if isinstance(p, Mapping) and "text" in p
            )
        if isinstance(content, str) and content:
            out.append((str(m.get("role", "")), content))
    return out


def _finish_reasons(outputs: object) -> list[object]:
    """An LLM output's finish reasons: each OpenAI choice's, Anthropic's ``stop_reason``."""
    if not isinstance(outputs, Mapping):
        return []
    choices = outputs.get("choices")
    found = (
        [c.get("finish_reason") for c in choices if isinstance(c, Mapping)]
        if isinstance(choices, list)
        else []
    )
    return [*found, outputs.get("stop_reason")]


class MlflowReader(DocumentReader):
    name = "mlflow"

    def read(self, span: SpanRecord) -> SpanReading | None:
        attrs = span.attributes
        if SPAN_TYPE not in attrs:  # most spans: one lookup
            return None
        kind = _value(attrs, SPAN_TYPE)
        if not isinstance(kind, str):
            return None
        kind = kind.upper()
        if kind == "RETRIEVER":
            return self.retrieval(
                query_in(_value(attrs, SPAN_INPUTS)), _documents(_value(attrs, SPAN_OUTPUTS))
            )
        if kind == "TOOL":
            return self.tool_call(
                span.name, _value(attrs, SPAN_INPUTS), _documents(_value(attrs, SPAN_OUTPUTS))
            )
        if kind in _GENERATIONS:
            return self._generation(attrs)
        if span.parent_span_id is None:
            return self.pipeline(query_in(_value(attrs, SPAN_INPUTS)))
        return self.ignored()

    def _generation(self, attrs: Mapping[str, AttributeValue]) -> SpanReading:
        outputs = _value(attrs, SPAN_OUTPUTS)
        continues = asks_for_tools(_finish_reasons(outputs))
        answer, problem = (
            (None, None) if continues else extract_answer(text_attr(attrs, SPAN_OUTPUTS))
        )
        inputs = _value(attrs, SPAN_INPUTS)
        messages = _messages(inputs)
        users = [text for role, text in messages if role == "user"]
        system = [text for role, text in messages if role.lower() in _INSTRUCTION_ROLES]
        response_id = outputs.get("id") if isinstance(outputs, Mapping) else None
        model = _value(attrs, _MODEL)
        return SpanReading(
            self.name,
            Role.GENERATION,
            query=users[-1] if users else None,
            prompt=prompt_chunks(messages),
            instructions=instruction_chunks(system),
            tool_results=message_tool_results(
                inputs.get("messages") if isinstance(inputs, Mapping) else None, self._keys
            ),
            answer=answer,
            answer_problem=problem,
            model=model if isinstance(model, str) else None,
            response_id=response_id if isinstance(response_id, str) else None,
            continues=continues,
        )
