"""Batch mode against the fake API's Message Batches endpoints: the real ``anthropic`` client
creates, polls and reads the batch; results are matched by custom ID and cost half of realtime
for the same tokens."""

from __future__ import annotations

import time

import pytest

from ragtrace.evaluation.judges import AnthropicJudge, JudgeUnavailable
from ragtrace.evaluation.judges.model.anthropic_batch import (
    BATCH_PRICE_FACTOR,
    AnthropicBatchJudge,
    BatchNotFound,
    BatchRequest,
)
from tests.fakes.anthropic_server import FakeAnthropic, entail_all, error_reply

CONTEXT = (
    "Audit log retention on the Enterprise plan is 90 days.",
    "Team plans keep activity history for 30 days.",
)
ANSWERS = [
    "Audit logs are kept for 90 days.",
    "Activity history is kept for 30 days.",
    "Audit logs are kept for 90 days. Logs are deleted nightly.",
]


def _requests() -> list[BatchRequest]:
    return [BatchRequest(f"job-{i}", answer, CONTEXT) for i, answer in enumerate(ANSWERS)]


def test_a_batch_is_submitted_polled_and_read_by_custom_id() -> None:
    with FakeAnthropic(entail_all) as api:
        api.batches.processing_s = 0.3
        judge = AnthropicJudge(api_key="k", base_url=api.base_url)
        batch = AnthropicBatchJudge(judge)
        requests = _requests()
        batch_id = batch.submit(requests)
        assert not batch.status(batch_id).ended
        time.sleep(0.35)
        status = batch.status(batch_id)
        assert status.ended and status.latency_s == pytest.approx(0.3, abs=0.01)
        results = batch.results(batch_id, {r.custom_id: r for r in requests})
        assert sorted(results) == ["job-0", "job-1", "job-2"]
        # The fake answers in reverse order: matching is by custom ID, not position.
        lines = [r for r in api.requests if r.path.endswith("/results")]
        assert len(lines) == 1
        assert [c.claim for c in results["job-2"].claims] == [
            "Audit logs are kept for 90 days.",
            "Logs are deleted nightly.",
        ]
        assert results["job-1"].claims[0].claim == "Activity history is kept for 30 days."
        assert all(r.error is None and r.latency_s == status.latency_s for r in results.values())
        # Each request's params are the realtime judge's own request body.
        created = next(r for r in api.requests if r.method == "POST")
        params = created.body["requests"][0]["params"]
        assert params["tools"][0]["name"] == "record_claims"
        assert params["tool_choice"] == {"type": "tool", "name": "record_claims"}

        # Half the realtime cost for the same tokens, from the usage the fake reports.
        for request in requests:
            realtime = judge.groundedness(request.answer, request.context)
            batched = results[request.custom_id]
            assert batched.usage == realtime.usage
            assert realtime.cost_usd > 0
            assert batched.cost_usd == pytest.approx(BATCH_PRICE_FACTOR * realtime.cost_usd)


def test_errored_requests_become_error_results_and_api_failures_raise() -> None:
    with FakeAnthropic(entail_all) as api:
        judge = AnthropicJudge(api_key="k", base_url=api.base_url)
        batch = AnthropicBatchJudge(judge)
        api.enqueue(error_reply(400, "invalid_request_error", "prompt too long"))
        requests = _requests()[:2]
        batch_id = batch.submit(requests)
        results = batch.results(batch_id, {r.custom_id: r for r in requests})
        # The fake answers the last request first: it got the scripted error.
        assert results["job-1"].error == "batch request errored" and results["job-1"].score is None
        assert results["job-0"].error is None and results["job-0"].score == 1.0
        with pytest.raises(BatchNotFound):
            batch.status("msgbatch_unknown")
    with FakeAnthropic(entail_all) as api:
        api.stop()  # nothing listens: the API is unreachable
        batch = AnthropicBatchJudge(AnthropicJudge(api_key="k", base_url=api.base_url, timeout=2))
        with pytest.raises(JudgeUnavailable):
            batch.submit(_requests())
    with pytest.raises(ValueError):
        BatchRequest("not a valid id", "a", ())
