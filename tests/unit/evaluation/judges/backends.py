"""Every model-judge backend, built the way users build it, against the one local fake.

``api`` is the fake, answering only what a test enqueues. ``backend`` is a pytest fixture
parametrized over :data:`BACKENDS`; ``backend.judge(api)`` is the judge of that backend pointed
at the fake: the Anthropic API, Claude on Bedrock (real SigV4 signing with the fake account's
keys, taken from the environment as in production), Claude on Vertex AI (an access token), and
an OpenAI-compatible endpoint (forced function calls, or JSON mode for ``openai-json``). A test
using it passes for every backend or fails naming one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from ragtrace.evaluation.judges import PriceTable, make_judge
from ragtrace.evaluation.judges.model.judge import ModelJudge
from ragtrace.evaluation.judges.spec import JudgeSpec
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.platforms import AwsAccount

__all__ = ["BACKENDS", "OPENAI_MODEL", "Backend", "api", "aws_env", "backend"]

BACKENDS = ("anthropic", "bedrock", "vertex", "openai", "openai-json")
OPENAI_MODEL = "qwen2.5-7b-instruct"
"""What the OpenAI-compatible fake serves (a local server's name: not in the price table)."""
_AWS_ENV = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AWS_DEFAULT_REGION")


@dataclass(frozen=True)
class Backend:
    name: str

    @property
    def provider(self) -> str:
        return self.name.split("-")[0]

    def spec(self, api: FakeAnthropic, **fields: Any) -> JudgeSpec:
        """The :class:`JudgeSpec` of this backend on ``api`` (``fields`` override)."""
        connection: dict[str, Any] = {
            "anthropic": {"api_key": "test-key", "base_url": api.base_url},
            "bedrock": {"region": api.aws.region, "base_url": api.base_url},
            "vertex": {
                "region": api.vertex.region,
                "project": api.vertex.project,
                "api_key": api.vertex.token,
                "base_url": f"{api.base_url}/v1",
            },
            "openai": {
                "model": OPENAI_MODEL,
                "base_url": f"{api.base_url}/v1",
                "api_key": "local",
                "output_mode": "json" if self.name == "openai-json" else "tools",
            },
        }[self.provider]
        return JudgeSpec(self.provider, **{"timeout_s": 5.0, **connection, **fields})

    def judge(self, api: FakeAnthropic, **options: Any) -> ModelJudge:
        """The judge of this backend on ``api``; JudgeSpec fields and constructor options
        among ``options`` (``prices`` defaults to the built-in table)."""
        spec_keys = {
            k: options.pop(k) for k in list(options) if k in JudgeSpec.__dataclass_fields__
        }
        options.setdefault("prices", PriceTable())
        judge = make_judge(self.spec(api, **spec_keys), **options)
        assert isinstance(judge, ModelJudge)
        return judge


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    """The local fake with no default reply: it answers what a test enqueues, in order."""
    with FakeAnthropic(responder=None) as fake:
        yield fake


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake account's AWS credentials in the environment, as the AWS chain reads them (no
    profile, no config files, no instance metadata)."""
    for name in _AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AwsAccount().access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AwsAccount().secret_key)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("RAGTRACE_JUDGE_MODEL", raising=False)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, aws_env: None) -> Backend:
    """Each backend in turn."""
    return Backend(str(request.param))
