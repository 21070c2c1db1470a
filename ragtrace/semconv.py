"""Every span, attribute, event and metric name ragtrace emits or reads, in one place.

Three vocabularies meet here:

* OpenInference (``openinference.span.kind``, ``input.value``, ``retrieval.documents.{i}.…``) so
  that Phoenix and every OpenInference-aware backend reads our spans, and so the consumers can
  score traces produced by OpenInference instrumentors (LlamaIndex, LangChain) without our
  decorators.
* OpenTelemetry GenAI (``gen_ai.*``) where it has a name for the thing, including the
  ``gen_ai.evaluation.result`` event the consumers write back.
* ``ragtrace.*`` for what neither standard names.

``docs/semantic-conventions.md`` documents each name, its type and when it is set; keep the two
in step.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ERROR_TYPE",
    "EVAL_FAMILY",
    "GEN_AI_RETRIEVAL_TOP_K",
    "LEGACY_SCHEMA_URL",
    "SCHEMA_URL",
    "ATTR_CELL",
    "ATTR_DATA_SOURCE",
    "ATTR_JUDGE_MODEL",
    "ATTR_JUDGE_PROMPT",
    "ATTR_K",
    "ATTR_METRIC",
    "ATTR_MODEL",
    "ATTR_OUTCOME",
    "ATTR_PIPELINE",
    "ATTR_REASON",
    "ATTR_SERVICE",
    "ATTR_TOKEN_TYPE",
    "EVALUATION_SCOPE",
    "EVAL_ANSWER_CORRECTNESS",
    "EVAL_ANSWER_COST_USD",
    "EVAL_ANSWER_QUESTION_ID",
    "EVAL_ANSWER_REFERENCE_SOURCE",
    "EVAL_ANSWER_RELEVANCY",
    "EVAL_CELL",
    "EVAL_CONTEXT_RELEVANCY",
    "EVAL_CONTEXT_SOURCE",
    "EVAL_CONTEXT_SOURCES",
    "EVAL_STEPS_COUNT",
    "EVAL_STEP_RECALL",
    "EVAL_GENERATOR_MODEL",
    "EVAL_GOLD_SIZE",
    "EVAL_GROUNDEDNESS",
    "EVAL_GROUNDEDNESS_CLAIMS",
    "EVAL_GROUNDEDNESS_NA_REASON",
    "EVAL_GROUNDEDNESS_NO_CLAIMS",
    "EVAL_GROUNDEDNESS_UNSUPPORTED",
    "EVAL_HIT_RATE",
    "EVAL_INJECTION_SUSPECTED",
    "EVAL_JUDGE_COST_USD",
    "EVAL_JUDGE_MODEL",
    "EVAL_JUDGE_NAME",
    "EVAL_JUDGE_PROMPT_SHA256",
    "EVAL_EARLIER_TURNS",
    "EVAL_EARLIER_TURN_UNITS",
    "EVAL_K",
    "EVAL_SESSION_ID",
    "GEN_AI_CONVERSATION_ID",
    "SESSION_ID",
    "EVAL_LABELS_VERSION",
    "EVAL_MARKER",
    "EVAL_MATCHED_BY",
    "EVAL_NDCG",
    "EVAL_PRECISION",
    "EVAL_QUESTION_ID",
    "EVAL_RECALL",
    "EVAL_RECALL_DEFINITION",
    "EVAL_RECALL_NA_REASON",
    "EVAL_RECIPROCAL_RANK",
    "EVAL_TARGET_SPAN_ID",
    "GEN_AI_DATA_SOURCE_ID",
    "GEN_AI_EVALUATION_EXPLANATION",
    "GEN_AI_EVALUATION_NAME",
    "GEN_AI_EVALUATION_RESULT",
    "GEN_AI_EVALUATION_SCORE_LABEL",
    "GEN_AI_EVALUATION_SCORE_VALUE",
    "GEN_AI_OPERATION_CHAT",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_OPERATION_RETRIEVAL",
    "GEN_AI_PROVIDER_NAME",
    "GEN_AI_REQUEST_MODEL",
    "GEN_AI_REQUEST_TOP_K",
    "GEN_AI_RESPONSE_MODEL",
    "GEN_AI_RETRIEVAL_DOCUMENTS",
    "GEN_AI_RETRIEVAL_QUERY_TEXT",
    "GEN_AI_TOKEN_TYPE",
    "INPUT_MIME_TYPE",
    "INPUT_VALUE",
    "INSTRUMENTATION_SCOPE",
    "LLM_MODEL_NAME",
    "METADATA",
    "METRIC_ANSWER_CORRECTNESS",
    "METRIC_ANSWER_RELEVANCY",
    "METRIC_CELL",
    "METRIC_CONSUMER_LAG",
    "METRIC_CONSUMER_PARTITIONS",
    "METRIC_DEPENDENCY_ERRORS",
    "METRIC_DLQ_MESSAGES",
    "METRIC_GEN_AI_CLIENT_OPERATION_DURATION",
    "METRIC_GEN_AI_CLIENT_TOKEN_USAGE",
    "METRIC_GROUNDEDNESS",
    "METRIC_GROUNDEDNESS_FAILED",
    "METRIC_HIT_RATE",
    "METRIC_INJECTION_SUSPECTED",
    "METRIC_JUDGE_BUDGET_EXHAUSTED",
    "METRIC_JUDGE_AUDIT",
    "METRIC_JUDGE_CALIBRATION",
    "METRIC_JUDGE_CALIBRATION_KAPPA",
    "METRIC_JUDGE_CALLS",
    "METRIC_JUDGE_COST",
    "METRIC_JUDGE_ERRORS",
    "METRIC_JUDGE_LATENCY",
    "METRIC_JUDGE_TOKENS",
    "METRIC_PARKED",
    "METRIC_RECALL",
    "METRIC_RECEIVER_REJECTED",
    "METRIC_RECIPROCAL_RANK",
    "METRIC_REDACTIONS",
    "METRIC_SCORING_DELAY",
    "METRIC_SDK_DROPPED",
    "METRIC_SDK_ERRORS",
    "METRIC_SDK_OVERSIZED",
    "METRIC_SPANS_UNRECOGNISED",
    "METRIC_TRACES_SAMPLED",
    "METRIC_TRACES_SCORED",
    "METRIC_TRACES_SEEN",
    "METRIC_TRACES_SKIPPED",
    "OPENINFERENCE_SPAN_KIND",
    "OUTPUT_MIME_TYPE",
    "OUTPUT_VALUE",
    "RAGTRACE_CONTENT_CAPTURED",
    "RAGTRACE_CONTEXT_COUNT",
    "RAGTRACE_CONTEXT_PREFIX",
    "RAGTRACE_INSTRUMENTATION_ERRORS",
    "RAGTRACE_PIPELINE_NAME",
    "RAGTRACE_QUERY_SHA256",
    "RAGTRACE_QUESTION_ID",
    "RAGTRACE_REFERENCE_ANSWER",
    "RAGTRACE_RETRIEVAL_COUNT",
    "RAGTRACE_STREAMED",
    "RAGTRACE_TRUNCATED",
    "RAGTRACE_VERSION",
    "RETRIEVAL_DOCUMENT_PREFIX",
    "SPAN_EVALUATION",
    "SPAN_GENERATE",
    "SPAN_PIPELINE",
    "SPAN_RETRIEVE",
    "SpanKind",
    "context_document_content",
    "context_document_id",
    "context_document_length",
    "context_document_sha256",
    "retrieval_document_content",
    "retrieval_document_id",
    "retrieval_document_length",
    "retrieval_document_score",
    "retrieval_document_sha256",
]

# --- instrumentation scopes -------------------------------------------------------------------
INSTRUMENTATION_SCOPE: Final = "ragtrace"
"""Tracer name of the decorators: the consumers recognise our spans by it."""
EVALUATION_SCOPE: Final = "ragtrace.evaluation"
"""Tracer/meter name of the consumers' write-back; spans from it are never scored again."""
SCHEMA_URL: Final = "https://opentelemetry.io/schemas/gen-ai/1.42.0"
"""``schema_url`` of every scope ragtrace emits under: the GenAI semantic conventions version
followed (open-telemetry/semantic-conventions-genai; core attributes such as ``error.type``
from semantic-conventions 1.44.0). docs/semantic-conventions.md lists what changed from the
names emitted before. The decorators' scope carries it under
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (ragtrace._stability)."""
LEGACY_SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.36.0"
"""The decorators' ``schema_url`` by default: the GenAI names they emit without the opt-in
(``retrieve``, ``gen_ai.request.top_k``) are those of semantic-conventions 1.36.0 and before."""


class SpanKind:
    """Values of ``openinference.span.kind`` that ragtrace emits or reads."""

    RETRIEVER: Final = "RETRIEVER"
    LLM: Final = "LLM"
    CHAIN: Final = "CHAIN"
    EVALUATOR: Final = "EVALUATOR"


# --- span names (defaults; a decorator's name= replaces them) ----------------------------------
SPAN_RETRIEVE: Final = "retrieve"
SPAN_GENERATE: Final = "generate"
SPAN_PIPELINE: Final = "rag.pipeline"
SPAN_EVALUATION: Final = "ragtrace.evaluation"

# --- OpenInference ------------------------------------------------------------------------------
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"
LLM_MODEL_NAME: Final = "llm.model_name"
SESSION_ID: Final = "session.id"
"""OpenInference's conversation ID: the turns of one session share it."""
METADATA: Final = "metadata"
RETRIEVAL_DOCUMENT_PREFIX: Final = "retrieval.documents."


def retrieval_document_id(i: int) -> str:
    return f"retrieval.documents.{i}.document.id"


def retrieval_document_score(i: int) -> str:
    return f"retrieval.documents.{i}.document.score"


def retrieval_document_content(i: int) -> str:
    return f"retrieval.documents.{i}.document.content"


# --- OpenTelemetry GenAI -----------------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_REQUEST_TOP_K: Final = "gen_ai.request.top_k"
"""The LLM sampling setting in the conventions; older ragtrace SDKs (and the default,
non-opt-in mode) wrote the retriever's k under it, so readers accept it on retrieval spans."""
GEN_AI_RETRIEVAL_TOP_K: Final = "gen_ai.retrieval.top_k"
"""How many documents the retriever was asked to return (the conventions' retrieval k)."""
GEN_AI_DATA_SOURCE_ID: Final = "gen_ai.data_source.id"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
"""The GenAI conventions' conversation (session, thread) ID: the turns of one conversation
share it."""
GEN_AI_OPERATION_RETRIEVAL: Final = "retrieval"
GEN_AI_OPERATION_CHAT: Final = "chat"
"""Value of ``gen_ai.operation.name`` on generation spans."""
"""Value of ``gen_ai.operation.name`` on retrieval spans."""
GEN_AI_RETRIEVAL_QUERY_TEXT: Final = "gen_ai.retrieval.query.text"
GEN_AI_RETRIEVAL_DOCUMENTS: Final = "gen_ai.retrieval.documents"
"""JSON array of ``{"id", "score"}`` objects, the GenAI form of the ranked result list."""
GEN_AI_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
ERROR_TYPE: Final = "error.type"
"""The class of a failure (core conventions, stable): on a failed result and on the judge's
duration metric (ragtrace.evaluation.judges.error_types lists the values)."""
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"

# --- ragtrace: instrumentation ------------------------------------------------------------------
RAGTRACE_VERSION: Final = "ragtrace.version"
RAGTRACE_QUERY_SHA256: Final = "ragtrace.query.sha256"
"""SHA-256 of the normalised query (``ragtrace.normalize.normalize_question``): lets the
consumers match labelled questions even when content capture is off."""
RAGTRACE_QUESTION_ID: Final = "ragtrace.question.id"
RAGTRACE_PIPELINE_NAME: Final = "ragtrace.pipeline.name"
RAGTRACE_RETRIEVAL_COUNT: Final = "ragtrace.retrieval.documents.count"
RAGTRACE_REFERENCE_ANSWER: Final = "ragtrace.reference_answer"
"""A reference answer for this request, set by the app on any span of the trace (e.g. replayed
golden questions): the consumers score answer correctness against it, before any labelled
question's ``reference_answer``."""
RAGTRACE_CONTENT_CAPTURED: Final = "ragtrace.content.captured"
RAGTRACE_TRUNCATED: Final = "ragtrace.truncated"
"""String array: the attribute keys whose values were cut to the size cap."""
RAGTRACE_STREAMED: Final = "ragtrace.streamed"
RAGTRACE_INSTRUMENTATION_ERRORS: Final = "ragtrace.instrumentation.errors"
RAGTRACE_CONTEXT_COUNT: Final = "ragtrace.context.documents.count"
RAGTRACE_CONTEXT_PREFIX: Final = "ragtrace.context.documents."


def context_document_id(i: int) -> str:
    """Chunk ID of the i-th context document supplied to a generation span."""
    return f"ragtrace.context.documents.{i}.document.id"


def context_document_content(i: int) -> str:
    return f"ragtrace.context.documents.{i}.document.content"


def context_document_sha256(i: int) -> str:
    return f"ragtrace.context.documents.{i}.document.sha256"


def context_document_length(i: int) -> str:
    return f"ragtrace.context.documents.{i}.document.length"


def retrieval_document_sha256(i: int) -> str:
    return f"ragtrace.retrieval.documents.{i}.document.sha256"


def retrieval_document_length(i: int) -> str:
    return f"ragtrace.retrieval.documents.{i}.document.length"


# --- ragtrace: evaluation write-back (flat attributes trace search can filter on) ---------------
EVAL_MARKER: Final = "ragtrace.evaluation"
"""``True`` on every span the consumers write; such spans are never scored."""
EVAL_TARGET_SPAN_ID: Final = "ragtrace.eval.target.span_id"
EVAL_FAMILY: Final = "ragtrace.eval.family"
"""On a per-family evaluation span: the metric family it carries (``recall``,
``groundedness``, ``answer``). ``gen_ai.evaluation.name`` only ever names one metric."""
EVAL_GROUNDEDNESS: Final = "ragtrace.eval.groundedness"
EVAL_GROUNDEDNESS_CLAIMS: Final = "ragtrace.eval.groundedness.claims"
EVAL_GROUNDEDNESS_UNSUPPORTED: Final = "ragtrace.eval.groundedness.unsupported_claims"
EVAL_GROUNDEDNESS_NO_CLAIMS: Final = "ragtrace.eval.groundedness.no_claims"
EVAL_RECALL: Final = "ragtrace.eval.recall"
EVAL_HIT_RATE: Final = "ragtrace.eval.hit_rate"
EVAL_PRECISION: Final = "ragtrace.eval.precision"
EVAL_RECIPROCAL_RANK: Final = "ragtrace.eval.reciprocal_rank"
EVAL_NDCG: Final = "ragtrace.eval.ndcg"
EVAL_CONTEXT_RELEVANCY: Final = "ragtrace.eval.context_relevancy"
EVAL_CONTEXT_SOURCE: Final = "ragtrace.eval.context.source"
"""Where the context the answer was judged against came from: ``retrieved`` (the retrieved
documents' texts), ``generation`` (the documents the generation span lists) or
``generation_input`` (the messages the model was given: the documents carried IDs only);
the first of :data:`EVAL_CONTEXT_SOURCES`."""
EVAL_CONTEXT_SOURCES: Final = "ragtrace.eval.context.sources"
"""Every source the judged context drew from, in order (a string array): ``retrieved``
(retriever steps), ``tool_result`` (tool-call steps and the tool results in the model's input),
``generation`` (the documents the generation span lists), ``generation_input`` (the messages
the model was given) and ``system_instructions`` (system/developer messages and
``gen_ai.system_instructions``, instruction-only paragraphs left out)."""
EVAL_STEPS_COUNT: Final = "ragtrace.eval.steps.count"
"""How many retrieval steps (retriever spans, tool calls that returned documents) the answer
drew on; written when there are several."""
EVAL_STEP_RECALL: Final = "ragtrace.eval.steps.recall"
"""With several retrieval steps: each step's own recall@k (per the recall definition), in step
order; ``ragtrace.eval.recall`` pools every step's top k."""
EVAL_SESSION_ID: Final = "ragtrace.eval.session.id"
"""The session (conversation) of the evaluated turn, when its trace carried one."""
EVAL_EARLIER_TURNS: Final = "ragtrace.eval.groundedness.earlier_turns"
"""Trace IDs of the earlier turns of the same session whose evidence the answer was judged
against besides its own (at most ``sessions.max_turns``, newest first)."""
EVAL_EARLIER_TURN_UNITS: Final = "ragtrace.eval.groundedness.earlier_turn_units"
"""IDs of the answer units supported only by evidence an earlier turn retrieved: the answer
rests on the conversation, not on this turn's retrieval."""
EVAL_K: Final = "ragtrace.eval.k"
EVAL_RECALL_DEFINITION: Final = "ragtrace.eval.recall.definition"
EVAL_GOLD_SIZE: Final = "ragtrace.eval.gold.size"
EVAL_QUESTION_ID: Final = "ragtrace.eval.question.id"
EVAL_MATCHED_BY: Final = "ragtrace.eval.question.matched_by"
EVAL_LABELS_VERSION: Final = "ragtrace.eval.labels.version"
EVAL_CELL: Final = "ragtrace.eval.cell"
EVAL_JUDGE_NAME: Final = "ragtrace.eval.judge.name"
EVAL_JUDGE_MODEL: Final = "ragtrace.eval.judge.model"
EVAL_JUDGE_PROMPT_SHA256: Final = "ragtrace.eval.judge.prompt_sha256"
EVAL_JUDGE_COST_USD: Final = "ragtrace.eval.judge.cost_usd"
EVAL_INJECTION_SUSPECTED: Final = "ragtrace.eval.injection_suspected"
"""``True`` when a context passage addresses an evaluator or a model (a suspected prompt
injection; never used as evidence). Written only when true."""
EVAL_RECALL_NA_REASON: Final = "ragtrace.eval.recall.na_reason"
"""Why recall was not computed for a trace with retrieved chunks (their IDs are content hashes)."""
EVAL_GROUNDEDNESS_NA_REASON: Final = "ragtrace.eval.groundedness.na_reason"
"""Why the answer was not judged (no answer text could be extracted from the output)."""
EVAL_ANSWER_RELEVANCY: Final = "ragtrace.eval.answer_relevancy"
EVAL_ANSWER_CORRECTNESS: Final = "ragtrace.eval.answer_correctness"
EVAL_ANSWER_QUESTION_ID: Final = "ragtrace.eval.answer.question.id"
"""The labelled question whose ``reference_answer`` the answer metrics were judged against."""
EVAL_ANSWER_COST_USD: Final = "ragtrace.eval.answer.judge.cost_usd"
EVAL_ANSWER_REFERENCE_SOURCE: Final = "ragtrace.eval.answer.reference.source"
"""Where the reference answer came from: ``span`` (``ragtrace.reference_answer``) or ``label``."""

# --- metrics (OTel names; Prometheus adds unit and _total suffixes) ---------------------------
METRIC_GROUNDEDNESS: Final = "ragtrace.groundedness"
METRIC_RECALL: Final = "ragtrace.recall"
METRIC_ANSWER_RELEVANCY: Final = "ragtrace.answer_relevancy"
METRIC_ANSWER_CORRECTNESS: Final = "ragtrace.answer_correctness"
METRIC_HIT_RATE: Final = "ragtrace.hit_rate"
METRIC_RECIPROCAL_RANK: Final = "ragtrace.reciprocal_rank"
METRIC_TRACES_SEEN: Final = "ragtrace.traces.seen"
METRIC_TRACES_SAMPLED: Final = "ragtrace.traces.sampled"
METRIC_TRACES_SCORED: Final = "ragtrace.traces.scored"
METRIC_TRACES_SKIPPED: Final = "ragtrace.traces.skipped"
METRIC_CELL: Final = "ragtrace.attribution"
METRIC_GROUNDEDNESS_FAILED: Final = "ragtrace.groundedness.failed"
"""Judged traces scored below the groundedness threshold; with ``ragtrace.groundedness``'s count
(same attributes) the not-grounded share and its interval (docs/statistics.md)."""
METRIC_JUDGE_CALIBRATION: Final = "ragtrace.judge.calibration"
"""The judge's last calibration, claims by ``human`` and ``verdict`` (supported/unsupported):
its sensitivity and specificity, to correct the not-grounded share."""
METRIC_JUDGE_CALIBRATION_KAPPA: Final = "ragtrace.judge.calibration.kappa"
"""Cohen's kappa of the judge's last calibration by ``bound`` (estimate, low, high: its 95 %
interval), beside ``ragtrace.judge.calibration``: the floor the audit's kappa is held to."""
METRIC_JUDGE_AUDIT: Final = "ragtrace.judge.audit"
"""The standing audit of the judge in use: audited unit verdicts by ``human`` (the auditor's
verdict) and ``verdict`` (the judge's), supported/unsupported — the running kappa and its n."""
METRIC_JUDGE_CALLS: Final = "ragtrace.judge.calls"
METRIC_JUDGE_ERRORS: Final = "ragtrace.judge.errors"
METRIC_JUDGE_TOKENS: Final = "ragtrace.judge.tokens"
METRIC_JUDGE_COST: Final = "ragtrace.judge.cost"
METRIC_JUDGE_LATENCY: Final = "ragtrace.judge.latency"
METRIC_JUDGE_BUDGET_EXHAUSTED: Final = "ragtrace.judge.budget.exhausted"
METRIC_INJECTION_SUSPECTED: Final = "ragtrace.judge.injection_suspected"
"""Judged traces whose context held a passage flagged as a suspected prompt injection."""
METRIC_DLQ_MESSAGES: Final = "ragtrace.dlq.messages"
METRIC_SCORING_DELAY: Final = "ragtrace.scoring.delay"
METRIC_CONSUMER_LAG: Final = "ragtrace.consumer.lag"
"""Per partition (topic, partition): end offset minus the group's committed offset."""
METRIC_CONSUMER_PARTITIONS: Final = "ragtrace.consumer.partitions"
"""Partitions assigned to one replica (0 while idle): its presence says a consumer is alive."""
METRIC_DEPENDENCY_ERRORS: Final = "ragtrace.consumer.dependency.errors"
"""Failed attempts of a consumer call to a dependency (``dependency``: redis, kafka, writeback)."""
METRIC_PARKED: Final = "ragtrace.traces.parked"
METRIC_REDACTIONS: Final = "ragtrace.redactions"
"""Values replaced by a placeholder before judging and write-back, by ``pattern`` and service."""
METRIC_SPANS_UNRECOGNISED: Final = "ragtrace.spans.unrecognised"
"""Spans no reader recognised (neither retrieval nor generation), by instrumentation ``scope``."""
METRIC_SDK_ERRORS: Final = "ragtrace.sdk.errors"
METRIC_SDK_DROPPED: Final = "ragtrace.sdk.dropped"
METRIC_SDK_OVERSIZED: Final = "ragtrace.sdk.oversized"
METRIC_GEN_AI_CLIENT_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
"""The judge's own calls (OTel GenAI semconv): tokens per call by gen_ai.token.type."""
METRIC_GEN_AI_CLIENT_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
"""The judge's own calls (OTel GenAI semconv): seconds per call."""
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
METRIC_RECEIVER_REJECTED: Final = "ragtrace.receiver.rejected"
"""Embedded OTLP/HTTP receiver: requests (or spans, on partial success) refused, by reason."""

# Metric attribute keys (bounded cardinality: never a trace ID, query or free text).
ATTR_SERVICE: Final = "service"
ATTR_PIPELINE: Final = "pipeline"
ATTR_JUDGE_MODEL: Final = "judge_model"
ATTR_JUDGE_PROMPT: Final = "judge_prompt"
ATTR_MODEL: Final = "model"
"""The application's generator model (bounded: ragtrace_consumers.telemetry.dimensions)."""
ATTR_DATA_SOURCE: Final = "data_source"
"""The retriever's gen_ai.data_source.id (bounded: ragtrace_consumers.telemetry.dimensions)."""
EVAL_GENERATOR_MODEL: Final = "ragtrace.eval.generator.model"
"""On the evaluation span: the model of the generation span that was judged."""
"""First 12 hex characters of the judge prompt template's SHA-256 (``JudgeInfo.prompt_sha256``)."""
ATTR_K: Final = "k"
"""The recall cut-off of the retrieval metrics (a trace's declared top-k, or ``scoring.k``;
bounded: ragtrace_consumers.telemetry.dimensions)."""
ATTR_REASON: Final = "reason"
ATTR_METRIC: Final = "metric"
ATTR_CELL: Final = "cell"
ATTR_TOKEN_TYPE: Final = "token_type"
ATTR_OUTCOME: Final = "outcome"
