"""The wire formats :class:`~tests.fakes.anthropic_server.FakeAnthropic` speaks besides the
Anthropic API's own: Claude on Amazon Bedrock and on Google Vertex AI, and OpenAI's Chat
Completions (translated to and from a Messages API exchange, so one scripted reply serves every
judge backend).

- Bedrock: ``POST /model/{modelId}/invoke``, the model only in the path, ``anthropic_version``
  in the body, signed with SigV4: the fake checks the ``Authorization`` header's shape and
  credential scope (its access key, today's date, its region, service ``bedrock``) and
  recomputes the signature with botocore from its own secret key; a mismatch is a 403 as
  Bedrock sends it. Errors go out in Bedrock's shape (``{"message": …}`` with
  ``x-amzn-ErrorType``).
- Vertex AI: ``POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/
  {model}:rawPredict`` with ``Authorization: Bearer {token}``; wrong project, region or token
  are refused as Vertex refuses them.
- Google's OAuth token endpoint (``POST /token``): a service account's signed JWT grant for the
  cloud-platform scope gets the project's access token, so Application Default Credentials
  whose ``token_uri`` points here run for real.
- Chat Completions: ``POST /v1/chat/completions``; a forced function call becomes the
  ``tool_choice`` the Messages-side responders read, a ``tool_use`` reply becomes
  ``tool_calls`` (or, in JSON mode, the message content), usage becomes ``prompt_tokens`` /
  ``completion_tokens`` / ``prompt_tokens_details.cached_tokens``.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AwsAccount",
    "Route",
    "VertexProject",
    "bedrock_error",
    "chat_as_messages",
    "check_sigv4",
    "check_vertex",
    "google_token",
    "messages_as_chat",
    "route",
]

_BEDROCK = re.compile(r"^/model/(?P<model>[^/]+)/invoke$")
_VERTEX = re.compile(
    r"^/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/anthropic/"
    r"models/(?P<model>[^/:]+):rawPredict$"
)
_SIGV4 = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})"
)
_JSON_MODE_TOOL = re.compile(r"Instead of calling (\w+),")


@dataclass(frozen=True)
class AwsAccount:
    """The credentials and region the fake Bedrock accepts."""

    access_key: str = "AKIDFAKEJUDGE0000001"
    secret_key: str = "fake-secret-key-for-sigv4-only"
    region: str = "us-east-1"


@dataclass(frozen=True)
class VertexProject:
    """The project, region and access token the fake Vertex AI accepts."""

    project: str = "fake-project"
    region: str = "us-east5"
    token: str = "ya29.fake-access-token"


@dataclass(frozen=True)
class Route:
    """Which API a request speaks; ``model`` when the path carries it (Bedrock, Vertex AI)."""

    wire: str
    model: str | None = None
    project: str | None = None
    region: str | None = None


def route(method: str, path: str) -> Route | None:
    """The API ``method path`` belongs to (None: no such route)."""
    if method != "POST":
        return None
    path = path.split("?")[0]
    if path == "/v1/messages":
        return Route("anthropic")
    if path == "/v1/chat/completions":
        return Route("openai")
    if path == "/token":
        return Route("google_token")
    bedrock = _BEDROCK.match(path)
    if bedrock:
        return Route("bedrock", urllib.parse.unquote(bedrock["model"]))
    vertex = _VERTEX.match(path)
    if vertex:
        return Route(
            "vertex", urllib.parse.unquote(vertex["model"]), vertex["project"], vertex["region"]
        )
    return None


def check_sigv4(
    account: AwsAccount, method: str, url: str, headers: Mapping[str, str], body: bytes
) -> str | None:
    """Why the request's SigV4 signature is not ``account``'s (None: it is)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    found = _SIGV4.fullmatch(headers.get("authorization", ""))
    if found is None:
        return f"not a SigV4 Authorization header: {headers.get('authorization')!r}"
    amz_date = headers.get("x-amz-date", "")
    scope = (found["key"], found["date"], found["region"], found["service"])
    if scope != (account.access_key, amz_date[:8], account.region, "bedrock"):
        return f"credential scope {'/'.join(scope)} is not this account's bedrock scope"
    signed = found["signed"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return f"host and x-amz-date must be signed, signed: {signed}"
    request = AWSRequest(
        method=method, url=url, headers={h: headers[h] for h in signed if h in headers}, data=body
    )
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(
        Credentials(account.access_key, account.secret_key), "bedrock", account.region
    )
    expected = signer.signature(
        signer.string_to_sign(request, signer.canonical_request(request)), request
    )
    if expected != found["signature"]:
        return "The request signature we calculated does not match the signature you provided."
    return None


def check_vertex(project: VertexProject, where: Route, headers: Mapping[str, str]) -> str | None:
    """Why the request is not for ``project`` with its token (None: it is)."""
    if headers.get("authorization") != f"Bearer {project.token}":
        return "Request had invalid authentication credentials."
    if (where.project, where.region) != (project.project, project.region):
        return f"Permission denied on projects/{where.project}/locations/{where.region}"
    return None


def google_token(project: VertexProject, form: bytes) -> tuple[int, dict[str, Any]]:
    """Google's answer to a service account's JWT grant (the project's token when the JWT asks
    for the cloud-platform scope; its signature is not checked)."""
    fields = urllib.parse.parse_qs(form.decode("utf-8"))
    if fields.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
        return 400, {"error": "unsupported_grant_type"}
    payload = fields["assertion"][0].split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    if "https://www.googleapis.com/auth/cloud-platform" not in str(claims.get("scope")):
        return 400, {"error": "invalid_scope", "error_description": str(claims.get("scope"))}
    return 200, {"access_token": project.token, "expires_in": 3599, "token_type": "Bearer"}


def bedrock_error(body: Any) -> tuple[Any, dict[str, str]]:
    """An Anthropic error body as Bedrock sends errors."""
    if not (isinstance(body, dict) and body.get("type") == "error"):
        return body, {}
    kind = {
        "rate_limit_error": "ThrottlingException",
        "overloaded_error": "ServiceUnavailableException",
        "invalid_request_error": "ValidationException",
        "authentication_error": "AccessDeniedException",
    }.get(str(body["error"].get("type")), "InternalServerException")
    return {"message": body["error"].get("message", "")}, {"x-amzn-ErrorType": kind}


# --- Chat Completions <-> Messages -------------------------------------------------------------
def chat_as_messages(chat: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API request a Chat Completions request stands for (what responders read)."""
    messages = chat.get("messages", [])
    system = "".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    user = [m for m in messages if m.get("role") == "user"]
    request: dict[str, Any] = {
        "model": chat.get("model"),
        "max_tokens": chat.get("max_tokens"),
        "system": [{"type": "text", "text": system}],
        "messages": [{"role": "user", "content": user[0]["content"] if user else ""}],
    }
    choice = chat.get("tool_choice")
    if isinstance(choice, dict):
        request["tool_choice"] = {"type": "tool", "name": choice["function"]["name"]}
    else:
        named = _JSON_MODE_TOOL.search(system)
        if named:
            request["tool_choice"] = {"type": "tool", "name": named.group(1)}
    return request


def messages_as_chat(message: Any, *, json_mode: bool) -> Any:
    """A Messages API response (or error) as the Chat Completions endpoint would answer."""
    if not isinstance(message, dict):
        return message
    if message.get("type") == "error":
        error = message["error"]
        return {"error": {"message": error.get("message"), "type": error.get("type"), "code": None}}
    if message.get("type") != "message":
        return message
    blocks = message.get("content") or []
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text") or None
    reply: dict[str, Any] = {"role": "assistant", "content": text}
    if json_mode:
        if calls:
            reply["content"] = json.dumps(calls[0]["input"])
    elif calls:
        reply["tool_calls"] = [
            {
                "id": f"call_{b['id']}",
                "type": "function",
                "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
            }
            for b in calls
        ]
    finish = {"max_tokens": "length", "tool_use": "tool_calls"}.get(
        str(message.get("stop_reason")), "stop"
    )
    if json_mode and finish == "tool_calls":
        finish = "stop"
    usage = message.get("usage") or {}
    cached = int(usage.get("cache_read_input_tokens") or 0)
    prompt = (
        int(usage.get("input_tokens") or 0)
        + cached
        + int(usage.get("cache_creation_input_tokens") or 0)
    )
    completion = int(usage.get("output_tokens") or 0)
    return {
        "id": f"chatcmpl-{message.get('id')}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": message.get("model"),
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None, "message": reply}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }
