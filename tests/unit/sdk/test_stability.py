"""OTEL_SEMCONV_STABILITY_OPT_IN: the decorators' GenAI names by default and under
``gen_ai_latest_experimental`` (ragtrace._stability), read as the OpenTelemetry
instrumentations read it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.trace import SpanKind

import ragtrace
from ragtrace import _kinds
from ragtrace import semconv as sc
from ragtrace._stability import gen_ai_latest_experimental
from tests.unit.sdk.sdk_spans import attrs, by_name, finished


@pytest.fixture()
def opt_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def set_to(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
        else:
            monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", value)
        gen_ai_latest_experimental.cache_clear()
        _kinds._tracer = None  # the scope's schema URL follows the mode

    yield set_to
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    gen_ai_latest_experimental.cache_clear()
    _kinds._tracer = None


def _run() -> None:
    @ragtrace.retrieve(top_k=4, data_source="kb-prod")
    def search(query: str) -> list[str]:
        return ["a"]

    @ragtrace.retrieve(name="rerank", top_k=2)
    def rerank(query: str) -> list[str]:
        return ["a"]

    @ragtrace.generate(model="gpt-x", provider="openai")
    def answer(query: str, context: list[str]) -> str:
        return "an answer"

    answer("q?", search("q?") + rerank("q?"))


@pytest.mark.parametrize(
    "value", ["gen_ai_latest_experimental", "http, gen_ai_latest_experimental "]
)
def test_latest_experimental_names_kinds_and_schema(opt_in: Any, value: str) -> None:
    opt_in(value)
    _run()
    retrieval = by_name("retrieval kb-prod")
    assert retrieval.kind is SpanKind.CLIENT
    got = attrs(retrieval)
    assert got[sc.GEN_AI_RETRIEVAL_TOP_K] == 4 and sc.GEN_AI_REQUEST_TOP_K not in got
    assert got[sc.OPENINFERENCE_SPAN_KIND] == "RETRIEVER"  # OpenInference kept
    assert got[sc.GEN_AI_OPERATION_NAME] == "retrieval"
    named = by_name("rerank")  # a name the user gave is kept; the kind follows the conventions
    assert named.kind is SpanKind.CLIENT and attrs(named)[sc.GEN_AI_RETRIEVAL_TOP_K] == 2
    generation = attrs(by_name("generate"))
    assert (generation[sc.GEN_AI_OPERATION_NAME], generation[sc.GEN_AI_PROVIDER_NAME]) == (
        "chat",
        "openai",
    )
    for span in finished():
        scope = span.instrumentation_scope
        assert scope is not None
        assert (scope.name, scope.version, scope.schema_url) == (
            "ragtrace",
            ragtrace.__version__,
            "https://opentelemetry.io/schemas/gen-ai/1.42.0",
        )


@pytest.mark.parametrize("value", [None, "", "gen_ai", "http"])
def test_default_keeps_the_names_emitted_before(opt_in: Any, value: str | None) -> None:
    opt_in(value)
    _run()
    retrieval = by_name("retrieve")
    assert retrieval.kind is SpanKind.INTERNAL
    got = attrs(retrieval)
    assert got[sc.GEN_AI_REQUEST_TOP_K] == 4 and sc.GEN_AI_RETRIEVAL_TOP_K not in got
    generation = attrs(by_name("generate"))
    assert (generation[sc.GEN_AI_OPERATION_NAME], generation[sc.GEN_AI_PROVIDER_NAME]) == (
        "chat",
        "openai",
    )
    scope = retrieval.instrumentation_scope
    assert scope is not None
    assert (scope.version, scope.schema_url) == (
        ragtrace.__version__,
        "https://opentelemetry.io/schemas/1.36.0",
    )
