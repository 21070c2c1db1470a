"""The Messages API client for each place Claude is served: the Anthropic API, Amazon Bedrock,
Google Vertex AI — the ``anthropic`` package's own clients, so the request a judge builds is the
same everywhere and only the transport differs.

- ``anthropic``: ``anthropic.Anthropic`` (``x-api-key``; ``POST /v1/messages``).
- ``bedrock``: ``anthropic.AnthropicBedrock`` (the ``anthropic[bedrock]`` extra: boto3/botocore
  sign each request with SigV4 for service ``bedrock``; ``POST /model/{model}/invoke``, the model
  ID in the path). A Bedrock API key (``api_key``, ``AWS_BEARER_TOKEN_BEDROCK``) is sent as a
  bearer token instead.
- ``vertex``: ``anthropic.AnthropicVertex`` (``POST /v1/projects/{project}/locations/{region}/
  publishers/anthropic/models/{model}:rawPredict`` with a bearer token: ``api_key`` when given,
  else Application Default Credentials through google-auth, the ``anthropic[vertex]`` extra).

Each client is built with ``max_retries=0``: the judge's
:class:`~ragtrace.evaluation.judges.model.retry.CallBudget` owns retries. Settings the client cannot
work without (a region, AWS credentials, a project) are checked here, so a missing one is a
ValueError naming it when the judge is built rather than a failure on every call.
"""

from __future__ import annotations

import os
from typing import Any

from ..spec import ENV_VERTEX_PROJECT, ENV_VERTEX_REGION

__all__ = ["CLAUDE_PROVIDERS", "ENV_BEDROCK_API_KEY", "claude_client"]

CLAUDE_PROVIDERS: tuple[str, ...] = ("anthropic", "bedrock", "vertex")
ENV_BEDROCK_API_KEY = "AWS_BEARER_TOKEN_BEDROCK"
"""A Bedrock API key (read by ``anthropic.AnthropicBedrock``; replaces SigV4 signing)."""


def claude_client(
    provider: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    region: str | None = None,
    project: str | None = None,
    timeout: float,
) -> Any:
    """The Messages API client for ``provider`` (module doc); ValueError when a setting it
    needs is missing or the provider unknown."""
    import anthropic  # the `judge` extra

    if provider == "anthropic":
        return anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
    if provider == "bedrock":
        if not (api_key or os.environ.get(ENV_BEDROCK_API_KEY)):
            _check_aws_credentials(region)
        try:
            return anthropic.AnthropicBedrock(
                aws_region=region,
                api_key=api_key,
                base_url=base_url,
                timeout=timeout,
                max_retries=0,
            )
        except ValueError as exc:  # no region
            raise ValueError(f"the bedrock judge: {exc}") from None
    if provider == "vertex":
        region = region or os.environ.get(ENV_VERTEX_REGION) or None
        if region is None:
            raise ValueError(
                f"the vertex judge needs a region: give --region (config judge.region) or set "
                f"{ENV_VERTEX_REGION}"
            )
        project = project or os.environ.get(ENV_VERTEX_PROJECT) or None
        if project is None and api_key is None:
            project = _adc_project()
        if project is None:
            raise ValueError(
                f"the vertex judge needs a project: give --project (config judge.project) or "
                f"set {ENV_VERTEX_PROJECT}"
            )
        kwargs: dict[str, Any] = {"region": region, "access_token": api_key}
        if project is not None:
            kwargs["project_id"] = project
        return anthropic.AnthropicVertex(
            **kwargs, base_url=base_url, timeout=timeout, max_retries=0
        )
    raise ValueError(
        f"no Claude client for provider {provider!r}; expected one of {CLAUDE_PROVIDERS}"
    )


def _check_aws_credentials(region: str | None) -> None:
    try:
        import boto3
    except ImportError:
        raise ValueError(
            "the bedrock judge signs requests with boto3: pip install 'anthropic[bedrock]'"
        ) from None
    session = boto3.Session(region_name=region)
    if session.get_credentials() is None:
        raise ValueError(
            "the bedrock judge found no AWS credentials: set AWS_ACCESS_KEY_ID and "
            f"AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or a Bedrock API key ({ENV_BEDROCK_API_KEY})"
        )


def _adc_project() -> str | None:
    """The project of Application Default Credentials, None when they name none."""
    try:
        import google.auth
        import google.auth.exceptions
    except ImportError:
        raise ValueError(
            "the vertex judge without an access token uses Application Default Credentials: "
            "pip install 'anthropic[vertex]'"
        ) from None
    try:
        _, project = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise ValueError(f"the vertex judge found no Google credentials: {exc}") from None
    return str(project) if project else None
