"""Every model-judge backend against the local fake of its API, at the wire level: the path, the
signing or token, the body each API expects; usage, cost and provenance on every score; retries
of 429 / 529 / 500 as ``retry-after`` asks, through the one retry owner; refused credentials as
error results."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from ragtrace.evaluation.judges import PROMPT_SHA256, JudgeSpec, ModelPrice, PriceTable
from ragtrace.evaluation.judges.model.openai_compat import JSON_MODE_INSTRUCTIONS
from ragtrace.evaluation.judges.spec import DEFAULT_MODELS
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    claims_reply,
    error_reply,
    overloaded,
    rate_limited,
    server_error,
    tool_reply,
)
from tests.fakes.platforms import AwsAccount, VertexProject
from tests.unit.evaluation.judges.backends import OPENAI_MODEL, Backend

C9930 = (
    "Audit log retention on the Enterprise plan is 90 days. Logs older than the retention "
    "window are deleted nightly and cannot be restored."
)
ANSWER = "Audit logs are retained for 90 days. [c-9930]"
VERDICT = claims_reply(
    [
        (
            "Audit logs are retained for 90 days.",
            True,
            "Audit log retention on the Enterprise plan is 90 days.",
        )
    ],
    usage={
        "input_tokens": 3000,
        "output_tokens": 200,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    },
)
HAIKU_COST = (3000 * 1.0 + 200 * 5.0) / 1e6


def test_one_verdict_scores_with_usage_cost_and_provenance(
    api: FakeAnthropic, backend: Backend
) -> None:
    api.enqueue(VERDICT)
    judge = backend.judge(api)
    result = judge.groundedness(ANSWER, [C9930])
    assert (result.score, result.error) == (1.0, None)
    assert result.claims[0].evidence_verified
    assert result.judge.provider == backend.provider == result.judge.name
    assert result.judge.to_dict()["provider"] == backend.provider
    expected_model = OPENAI_MODEL if backend.provider == "openai" else DEFAULT_MODELS[backend.name]
    assert result.judge.model == expected_model
    if backend.name == "openai-json":  # the mode is part of the prompt's identity
        assert result.judge.prompt_sha256 != PROMPT_SHA256
    else:
        assert result.judge.prompt_sha256 == PROMPT_SHA256
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3000, 200)
    if backend.provider == "openai":  # a local server's model: not priced, reported as 0
        assert result.cost_usd == 0.0 and not judge.prices.known(result.served_model)
    else:  # Claude on Bedrock and Vertex AI at Anthropic's list price
        assert result.cost_usd == pytest.approx(HAIKU_COST)
    assert len(api.requests) == 1


def test_anthropic_wire(api: FakeAnthropic) -> None:
    api.enqueue(VERDICT)
    Backend("anthropic").judge(api).groundedness(ANSWER, [C9930])
    request = api.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert (
        request.headers.get("x-api-key") == "test-key"
        or request.headers.get("authorization") == "Bearer test-key"
    )
    assert request.body["model"] == "claude-haiku-4-5"
    assert request.body["tool_choice"] == {"type": "tool", "name": "record_claims"}


@pytest.mark.usefixtures("aws_env")
def test_bedrock_wire_is_sigv4_signed_and_routed_by_model() -> None:
    with FakeAnthropic(responder=None) as api:
        api.enqueue(VERDICT)
        judge = Backend("bedrock").judge(api, model="us.anthropic.claude-sonnet-4-5-20250929-v1:0")
        result = judge.groundedness(ANSWER, [C9930])
    assert result.score == 1.0
    request = api.requests[0]
    assert request.method == "POST"
    assert request.path == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke"
    auth = request.headers["authorization"]
    assert auth.startswith(
        f"AWS4-HMAC-SHA256 Credential={AwsAccount().access_key}/"
        f"{request.headers['x-amz-date'][:8]}/us-east-1/bedrock/aws4_request, SignedHeaders="
    )
    assert "model" not in request.body  # in the path only
    assert request.body["anthropic_version"]  # in the body, not a header
    assert request.body["tool_choice"] == {"type": "tool", "name": "record_claims"}
    # Sonnet 4.5 by its Claude name: $3 / $15 per MTok
    assert result.cost_usd == pytest.approx((3000 * 3.0 + 200 * 15.0) / 1e6)


def test_bedrock_refuses_a_wrong_signature_and_the_judge_reports_it() -> None:
    import anthropic

    with FakeAnthropic(responder=None) as api:
        api.enqueue(VERDICT)
        # signed with the wrong secret: the fake's recomputed signature differs
        client = anthropic.AnthropicBedrock(
            aws_access_key=api.aws.access_key,
            aws_secret_key="not-the-secret",
            aws_region=api.aws.region,
            base_url=api.base_url,
            max_retries=0,
        )
        result = Backend("bedrock").judge(api, client=client).groundedness(ANSWER, [C9930])
    assert result.score is None and result.error is not None
    assert "HTTP 403" in result.error and "signature we calculated does not match" in result.error
    assert len(api.requests) == 1 and api.pending == 1


def test_bedrock_without_credentials_or_region_is_refused_when_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    from ragtrace.evaluation.judges import make_judge

    with pytest.raises(ValueError, match="found no AWS credentials"):
        make_judge(JudgeSpec("bedrock", region="us-east-1"))
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(ValueError, match="the bedrock judge: No AWS region"):
        make_judge(JudgeSpec("bedrock"))


def test_bedrock_api_key_is_a_bearer_token() -> None:
    with FakeAnthropic(responder=None) as api:
        api.enqueue(VERDICT)
        judge = Backend("bedrock").judge(api, api_key="bedrock-api-key")
        assert judge.groundedness(ANSWER, [C9930]).score == 1.0
    assert api.requests[0].headers["authorization"] == "Bearer bedrock-api-key"


def test_vertex_wire_is_the_raw_predict_path_with_a_bearer_token(api: FakeAnthropic) -> None:
    backend = Backend("vertex")
    api.enqueue(VERDICT)
    result = backend.judge(api).groundedness(ANSWER, [C9930])
    request = api.requests[0]
    project = VertexProject()
    assert request.path == (
        f"/v1/projects/{project.project}/locations/{project.region}/publishers/anthropic/"
        "models/claude-haiku-4-5@20251001:rawPredict"
    )
    assert request.headers["authorization"] == f"Bearer {project.token}"
    assert "model" not in request.body
    assert request.body["anthropic_version"]  # in the body, not a header
    assert result.served_model == "claude-haiku-4-5-20251001"
    # a wrong token or project is refused, and the judge reports it without retrying
    api.enqueue(VERDICT)
    bad = backend.judge(api, api_key="expired").groundedness(ANSWER, [C9930])
    assert bad.error is not None and "HTTP 401" in bad.error
    other = backend.judge(api, project="someone-else").groundedness(ANSWER, [C9930])
    assert other.error is not None and "Permission denied" in other.error
    assert len(api.requests) == 3


def test_vertex_with_application_default_credentials(
    api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No token, no project given: google-auth reads a service account key file (its project
    too), gets a token at its ``token_uri`` (the fake's) and the request carries it."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    adc = tmp_path / "service-account.json"
    adc.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": api.vertex.project,
                "private_key_id": "fake-key-id",
                "private_key": pem,
                "client_email": "judge@fake-project.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": f"{api.base_url}/token",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.delenv("ANTHROPIC_VERTEX_PROJECT_ID", raising=False)
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    api.enqueue(VERDICT)
    spec = Backend("vertex").spec(api, api_key=None, project=None)
    from ragtrace.evaluation.judges import make_judge

    result = make_judge(spec, prices=PriceTable()).groundedness(ANSWER, [C9930])
    assert result.score == 1.0, result.error
    assert [r.path for r in api.requests][0] == "/token"
    assert api.requests[1].path.startswith(f"/v1/projects/{api.vertex.project}/locations/")
    assert api.requests[1].headers["authorization"] == f"Bearer {api.vertex.token}"


def test_vertex_needs_a_region_and_a_project(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtrace.evaluation.judges import make_judge

    monkeypatch.delenv("CLOUD_ML_REGION", raising=False)
    monkeypatch.delenv("ANTHROPIC_VERTEX_PROJECT_ID", raising=False)
    with pytest.raises(ValueError, match="needs a region: give --region"):
        make_judge(JudgeSpec("vertex", api_key="token"))
    with pytest.raises(ValueError, match="needs a project: give --project"):
        make_judge(JudgeSpec("vertex", api_key="token", region="us-east5"))
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west1")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "from-env")
    judge = make_judge(JudgeSpec("vertex", api_key="token"))
    assert judge.info.provider == "vertex"


@pytest.mark.parametrize("mode", ["tools", "json"])
def test_openai_wire_is_chat_completions_with_a_forced_function_or_json_mode(
    api: FakeAnthropic, mode: str
) -> None:
    api.enqueue(VERDICT)
    backend = Backend("openai-json" if mode == "json" else "openai")
    result = backend.judge(api).groundedness(ANSWER, [C9930])
    assert result.score == 1.0
    request = api.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer local"
    body = request.body
    assert body["model"] == OPENAI_MODEL and body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert (
        "Do not use outside knowledge. Do not judge correctness." in body["messages"][0]["content"]
    )
    assert body["messages"][1]["content"].startswith('<context>\n<document index="1">')
    if mode == "tools":
        assert body["tool_choice"] == {"type": "function", "function": {"name": "record_claims"}}
        function = body["tools"][0]["function"]
        assert function["name"] == "record_claims"
        assert function["parameters"]["required"] == ["units"]
        assert "response_format" not in body
    else:
        assert "tools" not in body and body["response_format"] == {"type": "json_object"}
        schema = body["messages"][0]["content"].split("matching this JSON schema:\n")[1]
        assert json.loads(schema)["required"] == ["units"]
        assert JSON_MODE_INSTRUCTIONS.split("{name}")[0] in body["messages"][0]["content"]


def test_openai_prices_when_configured_and_counts_cached_prompt_tokens(api: FakeAnthropic) -> None:
    api.enqueue(
        claims_reply(
            [
                (
                    "Audit logs are retained for 90 days.",
                    True,
                    "retention on the Enterprise plan is 90 days",
                )
            ],
            usage={
                "input_tokens": 1000,
                "output_tokens": 100,
                "cache_read_input_tokens": 2000,
                "cache_creation_input_tokens": 0,
            },
        )
    )
    prices = PriceTable({OPENAI_MODEL: ModelPrice(0.5, 1.5, cache_read_multiplier=0.5)})
    result = Backend("openai").judge(api, prices=prices).groundedness(ANSWER, [C9930])
    # prompt_tokens 3000 of which 2000 cached
    assert (result.usage.input_tokens, result.usage.cache_read_input_tokens) == (1000, 2000)
    assert result.cost_usd == pytest.approx((1000 * 0.5 + 100 * 1.5 + 2000 * 0.25) / 1e6)


def test_an_unpriced_model_is_warned_once(
    api: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    api.enqueue(VERDICT, VERDICT)
    judge = Backend("openai").judge(api, model="unpriced-model-for-warning-test")
    with caplog.at_level(logging.WARNING, logger="ragtrace.evaluation.judges.model.pricing"):
        judge.groundedness(ANSWER, [C9930])
        judge.groundedness(ANSWER, [C9930])
    warned = [r.getMessage() for r in caplog.records if "no price" in r.getMessage()]
    assert len(warned) == 1 and "RAGTRACE_JUDGE_PRICES" in warned[0] and "unknown" in warned[0]


def test_429_retry_after_then_529_then_500_are_retried_by_the_budget(
    api: FakeAnthropic, backend: Backend
) -> None:
    api.enqueue(rate_limited(0.6), overloaded(0.2), server_error(), VERDICT)
    result = backend.judge(api).groundedness(ANSWER, [C9930])
    assert result.score == 1.0 and result.error is None
    assert len(api.requests) == 4
    assert api.requests[1].received_at - api.requests[0].received_at >= 0.6
    assert api.requests[2].received_at - api.requests[1].received_at >= 0.2
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3000, 200)


def test_persistent_429_parks_with_the_apis_retry_after(
    api: FakeAnthropic, backend: Backend
) -> None:
    from ragtrace.evaluation.judges import JudgeUnavailable

    api.enqueue(*[rate_limited(0.3)] * 6)
    slept: list[float] = []
    start = time.monotonic()

    def clock() -> float:
        return start + sum(slept)

    judge = backend.judge(api, budget_s=1.0, sleep=slept.append, clock=clock)
    with pytest.raises(JudgeUnavailable, match="asked to retry after 0.3s") as info:
        judge.groundedness(ANSWER, [C9930])
    assert info.value.retry_after == pytest.approx(0.3)
    assert slept == [0.3, 0.3, 0.3] and len(api.requests) == 4


def test_a_bad_request_is_an_error_result_without_retry(
    api: FakeAnthropic, backend: Backend
) -> None:
    api.enqueue(error_reply(400, "invalid_request_error", "prompt is too long"))
    result = backend.judge(api).groundedness(ANSWER, [C9930])
    assert result.score is None and result.error is not None
    assert "HTTP 400" in result.error and "prompt is too long" in result.error
    assert len(api.requests) == 1


def test_no_structured_output_is_retried_once_then_an_error(
    api: FakeAnthropic, backend: Backend
) -> None:
    from tests.fakes.anthropic_server import text_reply

    api.enqueue(
        text_reply("Fully grounded. Score: 1.0"),
        tool_reply({"units": []}, stop_reason="max_tokens"),
    )
    result = backend.judge(api).groundedness(ANSWER, [C9930])
    assert result.score is None and result.error is not None
    assert result.error.startswith("malformed judge output after one retry: output truncated")
    assert len(api.requests) == 2 and result.usage.input_tokens > 0


def test_answer_metrics_carry_the_provider(api: FakeAnthropic, backend: Backend) -> None:
    api.enqueue(
        tool_reply(
            {"needs": [{"need": "retention", "addressed": True, "reason": "r"}]},
            tool_name="record_relevancy",
        )
    )
    result = backend.judge(api).answer_relevancy("How long are logs kept?", ANSWER)
    assert result.score == 1.0 and result.judge.provider == backend.provider
    assert result.judge.prompt_sha256 != PROMPT_SHA256


@pytest.mark.usefixtures("aws_env")
def test_the_message_batches_api_is_the_anthropic_apis_only(api: FakeAnthropic) -> None:
    from ragtrace.evaluation.judges.model.anthropic import AnthropicJudge
    from ragtrace.evaluation.judges.model.anthropic_batch import AnthropicBatchJudge

    judge = Backend("bedrock").judge(api)
    assert isinstance(judge, AnthropicJudge)
    with pytest.raises(ValueError, match="not available on bedrock"):
        AnthropicBatchJudge(judge)
    anthropic_judge = Backend("anthropic").judge(api)
    assert isinstance(anthropic_judge, AnthropicJudge)
    assert AnthropicBatchJudge(anthropic_judge).judge is anthropic_judge
