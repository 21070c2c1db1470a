"""Re-scoring stored traces after a label is saved: the pipeline's own retrieval scoring and
cell over the trace rebuilt from its stored row and detail, the judgement kept (no judge call),
the row replaced in place, the recall recorded in the metrics; others asking the question on
request. The demo app's traces, through the real SDK, scored by a real embedded evaluator."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from importlib import resources

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace import semconv
from ragtrace.evaluation.judges import GroundednessResult, JudgeInfo, LexicalJudge
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.errors import NotRecorded
from ragtrace_consumers.model import TraceScores, question_version
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.runtime.rescoring import Rescoring, stored_judgement, stored_rag_trace
from ragtrace_consumers.stores.scored_results import ScoredResult
from ragtrace_consumers.writeback.recording_sink import RecordingSink
from tests.metric_points import histogram, points
from tests.unit.consumers.demo_client import QUESTIONS, run_app

LABELS = str(resources.files("ragtrace_consumers.demo").joinpath("labels.jsonl"))
AUDIT = QUESTIONS[0]  # gold c-4410 never retrieved: retrieval failed, groundedness 1.0


class _CountingJudge:
    """The lexical judge, counting its groundedness calls."""

    def __init__(self) -> None:
        self._inner = LexicalJudge()
        self.calls = 0

    @property
    def info(self) -> JudgeInfo:
        return self._inner.info

    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        self.calls += 1
        return self._inner.groundedness(answer, context)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


@pytest.fixture(scope="module")
def judge() -> _CountingJudge:
    return _CountingJudge()


@pytest.fixture(scope="module")
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture(scope="module")
def ev(
    tmp_path_factory: pytest.TempPathFactory, judge: _CountingJudge, reader: InMemoryMetricReader
) -> Iterator[EmbeddedEvaluator]:
    config = ConsumerConfig.defaults().replace(
        scoring={"k": 3},
        assembly={"quiet_s": 0.1},
        export={"metrics_interval_s": 3600},
        serve={
            "port": 0,
            "state": tmp_path_factory.mktemp("rescore") / "state.sqlite3",
            "labels": LABELS,
            "metrics": False,
        },
    )
    with EmbeddedEvaluator(config, judge=judge, extra_metric_readers=[reader]) as ev:
        run_app(ev.endpoint, [*QUESTIONS, AUDIT, AUDIT])
        assert len(ev.wait_for_results(len(QUESTIONS) + 2, 60)) == len(QUESTIONS) + 2
        # A row is visible before its metrics are recorded: wait for the 7 labelled ones.
        deadline = time.monotonic() + 30
        while _recall_count(reader) < len(QUESTIONS) + 1:
            assert time.monotonic() < deadline, "the scored traces' recall was not recorded"
            time.sleep(0.05)
        yield ev


def _audit_traces(ev: EmbeddedEvaluator) -> list[str]:
    return [r.trace_id for _, r in ev.state.results.all() if r.query == AUDIT]


def _row(ev: EmbeddedEvaluator, trace_id: str) -> ScoredResult:
    row = ev.state.results.get(trace_id)
    assert row is not None
    return row


def _relabel(ev: EmbeddedEvaluator, *gold: str) -> LabelledQuestion:
    old = ev.labels.by_id("q-audit-team")
    assert old is not None
    new = LabelledQuestion(old.qid, old.question, frozenset(gold))
    ev.labels.add(new, replaces=question_version(old))
    return new


def _recall_count(reader: InMemoryMetricReader) -> int:
    return sum(histogram(p).count for p in points(reader, semconv.METRIC_RECALL).values())


def test_rescoring_with_the_label_unchanged_reproduces_the_row(ev: EmbeddedEvaluator) -> None:
    first = _audit_traces(ev)[0]
    before = _row(ev, first)
    result, detail = before, ev.state.results.detail(first)
    trace = stored_rag_trace(result, detail)
    assert trace is not None and [c.id for c in trace.retrieved] == list(before.retrieved)
    assert stored_judgement(result, detail)[0]
    q = ev.labels.by_id("q-audit-team")
    assert q is not None
    assert Rescoring(ev.state.results, ev.pipeline, ev.sink)(first, q, False) == [first]
    after = _row(ev, first)
    assert after.scored_at >= before.scored_at
    assert {**after.to_dict(), "scored_at": 0} == {**before.to_dict(), "scored_at": 0}
    assert ev.state.results.detail(first) == detail


def test_a_new_gold_set_rescores_the_trace_without_judging_it_again(
    ev: EmbeddedEvaluator, judge: _CountingJudge, reader: InMemoryMetricReader
) -> None:
    first, *_ = _audit_traces(ev)
    seed = _relabel(ev, "c-4410")  # the seed's label, whichever test ran before
    Rescoring(ev.state.results, ev.pipeline, ev.sink)(first, seed, False)
    before = _row(ev, first)
    assert (before.cell, before.recall, before.groundedness) == ("retrieval_failed", 0.0, 1.0)
    calls, rows, recalls = judge.calls, len(ev.state.results), _recall_count(reader)
    judged = (ev.state.results.detail(first) or {})["groundedness"]
    seq = [tid for _, r in ev.state.results.all() for tid in [r.trace_id]]
    question = _relabel(ev, "c-9931")  # retrieved at rank 2 of 3
    done = Rescoring(ev.state.results, ev.pipeline, ev.sink)(first, question, False)
    assert done == [first]
    after = _row(ev, first)
    assert (after.cell, after.recall, after.hit_rate, after.k) == ("fine", 1.0, 1.0, 3)
    assert after.reciprocal_rank == 0.5
    assert (after.groundedness, after.claims, after.judge_name) == (
        before.groundedness,
        before.claims,
        before.judge_name,
    )
    assert after.extra["judge_cost_usd"] == before.extra["judge_cost_usd"]
    assert after.extra["labels_version"] == ev.labels.version()
    assert judge.calls == calls  # the judgement was kept
    assert len(ev.state.results) == rows
    assert [r.trace_id for _, r in ev.state.results.all()] == seq  # its place kept
    detail = ev.state.results.detail(first)
    assert detail is not None and detail["gold"] == ["c-9931"]
    assert detail["groundedness"] == judged
    assert _recall_count(reader) == recalls + 1
    # The others asking it were not touched.
    for other in _audit_traces(ev)[1:]:
        assert _row(ev, other).cell == "retrieval_failed"


def test_on_request_the_other_recent_traces_asking_it_are_rescored_too(
    ev: EmbeddedEvaluator, judge: _CountingJudge
) -> None:
    first, *others = _audit_traces(ev)
    assert len(others) == 2
    calls = judge.calls
    question = _relabel(ev, "c-9930", "c-4410")
    rescoring = Rescoring(ev.state.results, ev.pipeline, ev.sink)
    assert rescoring.asking(question, besides=first) == others[::-1]  # newest first
    assert rescoring(first, question, True) == [first, *others[::-1]]
    for tid in (first, *others):
        row = _row(ev, tid)
        assert (row.recall, row.cell) == (0.5, "fine"), tid  # at the 0.5 threshold
    assert judge.calls == calls
    # Another question's trace is not among them.
    exports = next(r for _, r in ev.state.results.all() if r.query == QUESTIONS[1])
    assert exports.trace_id not in rescoring.asking(question)


def test_an_unanswerable_label_leaves_recall_out_and_keeps_the_judgement(
    ev: EmbeddedEvaluator, reader: InMemoryMetricReader
) -> None:
    first = _audit_traces(ev)[0]
    before = _row(ev, first)
    recalls = _recall_count(reader)
    question = _relabel(ev)
    assert Rescoring(ev.state.results, ev.pipeline, ev.sink)(first, question, False) == [first]
    after = _row(ev, first)
    assert (after.recall, after.hit_rate, after.question_id) == (None, None, "q-audit-team")
    assert after.extra["gold_size"] == 0
    assert after.groundedness == before.groundedness
    assert after.cell != "retrieval_failed"
    assert _recall_count(reader) == recalls  # NaN stays out of the histograms
    detail = ev.state.results.detail(first)
    assert detail is not None and detail["gold"] == []


def test_a_trace_without_detail_or_label_is_left_as_it_is(ev: EmbeddedEvaluator) -> None:
    rescoring = Rescoring(ev.state.results, ev.pipeline, ev.sink)
    dark = next(r for _, r in ev.state.results.all() if r.query == QUESTIONS[5])
    unlabelled = LabelledQuestion("q-none", "a question nobody asked", frozenset({"c-1"}))
    assert rescoring(dark.trace_id, unlabelled, False) == []  # no label matches it
    assert _row(ev, dark.trace_id) == dark
    assert stored_rag_trace(dark, None) is None
    with pytest.raises(ValueError, match="recent"):
        Rescoring(ev.state.results, ev.pipeline, ev.sink, recent=0)


def test_a_judgement_that_cannot_be_read_back_leaves_the_trace_as_it_is(
    ev: EmbeddedEvaluator,
) -> None:
    rescoring = Rescoring(ev.state.results, ev.pipeline, ev.sink)
    exports = next(r for _, r in ev.state.results.all() if r.query == QUESTIONS[1])
    detail = ev.state.results.detail(exports.trace_id)
    assert detail is not None and stored_judgement(exports, detail)[0]
    q = ev.labels.by_id("q-exports-format")
    assert q is not None
    for judged in ({"score": "not a result"}, None):  # unreadable; kept nowhere
        ev.state.results.put(exports, {**detail, "groundedness": judged})
        assert stored_judgement(exports, ev.state.results.detail(exports.trace_id)) == (
            False,
            None,
        )
        assert rescoring(exports.trace_id, q, False) == []
        assert _row(ev, exports.trace_id) == exports
    ev.state.results.put(exports, detail)


def test_a_result_that_cannot_be_kept_is_not_counted(
    ev: EmbeddedEvaluator, reader: InMemoryMetricReader
) -> None:
    class _Full(RecordingSink):
        def record(self, scores: TraceScores) -> None:
            raise NotRecorded("disk full")

    first = _audit_traces(ev)[0]
    before, recalls = _row(ev, first), _recall_count(reader)
    question = _relabel(ev, "c-9930")
    full = _Full(ev.state.results)
    assert Rescoring(ev.state.results, ev.pipeline, full)(first, question, False) == []
    assert _row(ev, first) == before
    assert _recall_count(reader) == recalls
