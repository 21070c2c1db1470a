"""The public decorators: ``@retrieve``, ``@generate`` and ``@pipeline``.

Each works bare (``@ragtrace.retrieve``) or with options (``@ragtrace.retrieve(top_k=5)``), on
plain functions, methods, ``async def`` functions, generators and async generators. Options are
checked when decorating (a bad one raises ``ValueError``); nothing raises at call time.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from ragtrace import _drivers, semconv
from ragtrace._arguments import CONTEXT_NAMES, MODEL_NAMES, QUERY_NAMES, locate
from ragtrace._config import Redactor
from ragtrace._kinds import GENERATE, PIPELINE, RETRIEVE, Spec
from ragtrace.chunks import Extractor

__all__ = ["generate", "pipeline", "retrieve"]

F = TypeVar("F", bound=Callable[..., Any])


def _wrap(fn: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    if inspect.isasyncgenfunction(fn):
        return _drivers.wrap_async_generator(fn, spec)
    if inspect.isgeneratorfunction(fn):
        return _drivers.wrap_generator(fn, spec)
    if inspect.iscoroutinefunction(fn):
        return _drivers.wrap_async(fn, spec)
    return _drivers.wrap_sync(fn, spec)


def _check(name: str, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if value is not None and (
        isinstance(value, bool) and kind is not bool or not isinstance(value, kind)
    ):
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _check_common(
    name: Any, capture_content: Any, redact: Any, callables: Mapping[str, Any]
) -> None:
    _check("name", name, str, "a non-empty string")
    if name == "":
        raise ValueError("name must be a non-empty string, got ''")
    _check("capture_content", capture_content, bool, "True, False or None")
    for key, value in {"redact": redact, **callables}.items():
        if value is not None and not callable(value):
            raise ValueError(f"{key} must be callable, got {value!r}")


def _decorate(fn: Any, make: Callable[[Callable[..., Any]], Spec]) -> Any:
    if fn is not None:
        if not callable(fn):
            raise ValueError(f"ragtrace decorators take a function, got {fn!r}")
        return _wrap(fn, make(fn))
    return lambda f: _wrap(f, make(f))


@overload
def retrieve(fn: F, /) -> F: ...
@overload
def retrieve(
    *,
    name: str | None = None,
    top_k: int | None = None,
    data_source: str | None = None,
    query_arg: str | int | None = None,
    id_of: Extractor | None = None,
    text_of: Extractor | None = None,
    score_of: Extractor | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
) -> Callable[[F], F]: ...
def retrieve(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    top_k: int | None = None,
    data_source: str | None = None,
    query_arg: str | int | None = None,
    id_of: Extractor | None = None,
    text_of: Extractor | None = None,
    score_of: Extractor | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
) -> Any:
    """Trace a retrieval function: its query, and the ranked chunks it returns (or yields).

    ``top_k`` is recorded as ``gen_ai.request.top_k``, or ``gen_ai.retrieval.top_k`` with
    ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (else the call's ``top_k``
    argument, if the function has one); ``data_source`` as ``gen_ai.data_source.id``. With that
    opt-in the span is the conventions' ``retrieval {data_source}``, kind CLIENT, unless
    ``name`` is given (ragtrace._stability). Chunks are read by
    :func:`ragtrace.extract_chunks` with ``id_of``/``text_of``/``score_of``.
    """
    _check_common(
        name, capture_content, redact, {"id_of": id_of, "text_of": text_of, "score_of": score_of}
    )
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    _check("data_source", data_source, str, "a string")

    def make(f: Callable[..., Any]) -> Spec:
        fixed: dict[str, Any] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.RETRIEVER,
            semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_RETRIEVAL,
        }
        if top_k is not None:
            fixed[semconv.GEN_AI_REQUEST_TOP_K] = top_k
        if data_source:
            fixed[semconv.GEN_AI_DATA_SOURCE_ID] = data_source
        return Spec(
            RETRIEVE,
            name or semconv.SPAN_RETRIEVE,
            named=name is not None,
            fixed=fixed,
            query=locate(f, "query", query_arg, QUERY_NAMES),
            top_k=None
            if top_k is not None
            else locate(f, "top_k", None, ("top_k",), by_position=False),
            capture=capture_content,
            redact=redact,
            id_of=id_of,
            text_of=text_of,
            score_of=score_of,
        )

    return _decorate(fn, make)


@overload
def generate(fn: F, /) -> F: ...
@overload
def generate(
    *,
    name: str | None = None,
    model: str | None = None,
    query_arg: str | int | None = None,
    context_arg: str | int | None = None,
    model_arg: str | int | None = None,
    provider: str | None = None,
    id_of: Extractor | None = None,
    text_of: Extractor | None = None,
    score_of: Extractor | None = None,
    answer_of: Extractor | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
) -> Callable[[F], F]: ...
def generate(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    model: str | None = None,
    query_arg: str | int | None = None,
    context_arg: str | int | None = None,
    model_arg: str | int | None = None,
    provider: str | None = None,
    id_of: Extractor | None = None,
    text_of: Extractor | None = None,
    score_of: Extractor | None = None,
    answer_of: Extractor | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
) -> Any:
    """Trace a generation function: its query, the chunks it was given, its answer, its model.

    The answer is the return value (or the concatenated yielded pieces of a stream), read by
    ``answer_of`` when given. ``model`` is static; otherwise the call's ``model`` argument is used.
    The span carries ``gen_ai.operation.name`` ``chat`` and, when ``provider`` names the model's
    provider (the conventions' values: ``openai``, ``anthropic``, ``aws.bedrock``, ...),
    ``gen_ai.provider.name``.
    """
    _check_common(
        name,
        capture_content,
        redact,
        {"id_of": id_of, "text_of": text_of, "score_of": score_of, "answer_of": answer_of},
    )
    _check("model", model, str, "a string")
    _check("provider", provider, str, "a string")
    fixed = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.LLM,
        semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_CHAT,
    }
    if provider:
        fixed[semconv.GEN_AI_PROVIDER_NAME] = provider

    def make(f: Callable[..., Any]) -> Spec:
        query = locate(f, "query", query_arg, QUERY_NAMES)
        return Spec(
            GENERATE,
            name or semconv.SPAN_GENERATE,
            fixed=fixed,
            query=query,
            context=locate(f, "context", context_arg, CONTEXT_NAMES, after=query),
            model=None if model else locate(f, "model", model_arg, MODEL_NAMES, by_position=False),
            model_static=model or None,
            capture=capture_content,
            redact=redact,
            id_of=id_of,
            text_of=text_of,
            score_of=score_of,
            answer_of=answer_of,
        )

    return _decorate(fn, make)


@overload
def pipeline(fn: F, /) -> F: ...
@overload
def pipeline(
    *,
    name: str | None = None,
    question_id: str | None = None,
    attributes: Mapping[str, object] | None = None,
    query_arg: str | int | None = None,
    answer_of: Extractor | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
) -> Callable[[F], F]: ...
def pipeline(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    question_id: str | None = None,
    attributes: Mapping[str, object] | None = None,
    query_arg: str | int | None = None,
    answer_of: Extractor | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
) -> Any:
    """Trace one RAG request as the root span that ties its retrieval and generation together.

    ``name`` is the span name and ``ragtrace.pipeline.name`` (default span name ``rag.pipeline``,
    default pipeline name the function's name). ``question_id`` and ``attributes`` are recorded
    on every call; per call, use :func:`ragtrace.set_question_id` / :func:`ragtrace.set_attributes`
    inside the function.
    """
    _check_common(name, capture_content, redact, {"answer_of": answer_of})
    _check("question_id", question_id, str, "a string")
    if attributes is not None and not isinstance(attributes, Mapping):
        raise ValueError(f"attributes must be a mapping, got {attributes!r}")
    if attributes is not None and not all(isinstance(k, str) and k for k in attributes):
        raise ValueError(f"attribute keys must be non-empty strings, got {list(attributes)!r}")

    def make(f: Callable[..., Any]) -> Spec:
        pipeline_name = name or getattr(f, "__name__", None) or semconv.SPAN_PIPELINE
        return Spec(
            PIPELINE,
            name or semconv.SPAN_PIPELINE,
            fixed={
                semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.CHAIN,
                semconv.RAGTRACE_PIPELINE_NAME: pipeline_name,
            },
            query=locate(f, "query", query_arg, QUERY_NAMES),
            capture=capture_content,
            redact=redact,
            answer_of=answer_of,
            question_id=question_id or None,
            static_user=attributes,
        )

    return _decorate(fn, make)
