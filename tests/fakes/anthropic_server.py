"""A local HTTP server speaking the Anthropic Messages API wire format, so the real ``anthropic``
client (and everything built on it) runs in tests and benchmarks — also as Claude on Amazon
Bedrock (SigV4 checked) and Vertex AI, and as an OpenAI-compatible Chat Completions endpoint,
every reply scripted once in the Messages API's shape (:mod:`tests.fakes.platforms`).

    with FakeAnthropic() as api:                      # default responder answers every call
        os.environ["ANTHROPIC_BASE_URL"] = api.base_url
        api.enqueue(rate_limited(0.2), claims_reply([("It is 90 days.", True, "is 90 days")]))
        ...
        api.requests[0].body                           # every request received, parsed

Scripted replies are served first, in order; when the queue is empty the ``responder``
``(request_json) -> Reply`` answers (default :func:`entail_all`). A reply may carry ``render``,
``(request_json) -> body``: its body is then built from the request it answers, when it is
served (the scripting hook :func:`claims_reply` uses to file claims under the request's answer
units; read a reply's body through ``reply.resolved(request)``). A reply whose ``model`` or
``usage`` is left ``None`` gets them filled from the request: the model through
``model_aliases`` (an alias resolves to a dated ID, as the real API reports it) and usage from a
character-count estimate, with prompt caching simulated (``cache_control`` on the system block:
the first request with a given prefix reports ``cache_creation_input_tokens``, later ones
``cache_read_input_tokens``).
"""

from __future__ import annotations

import html
import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from typing_extensions import Self

from ragtrace.evaluation.judges.lexical.judge import LexicalJudge
from ragtrace.evaluation.judges.text import words
from tests.fakes.anthropic_batches import BatchEndpoints
from tests.fakes.platforms import (
    AwsAccount,
    Route,
    VertexProject,
    bedrock_error,
    chat_as_messages,
    check_sigv4,
    check_vertex,
    google_token,
    messages_as_chat,
    route,
)

__all__ = [
    "DEFAULT_ALIASES",
    "FakeAnthropic",
    "RecordedRequest",
    "Reply",
    "claims_reply",
    "entail_all",
    "error_reply",
    "lexical_responder",
    "malformed_json",
    "overloaded",
    "parse_units",
    "parse_user_message",
    "rate_limited",
    "server_error",
    "text_reply",
    "tool_reply",
    "units_reply",
]

DEFAULT_ALIASES: Mapping[str, str] = {
    "claude-haiku-4-5": "claude-haiku-4-5-20251001",
    "claude-sonnet-4-5": "claude-sonnet-4-5-20250929",
    "claude-opus-4-5": "claude-opus-4-5-20251101",
    "claude-haiku-4-5@20251001": "claude-haiku-4-5-20251001",
}
_ids = itertools.count(1)


@dataclass
class Reply:
    """One HTTP response. ``body`` is a JSON value or raw bytes; ``delay`` seconds before it."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    render: Callable[[Mapping[str, Any]], Any] | None = None
    """When set, the body is ``render(request_json)`` (see :meth:`resolved`)."""

    def resolved(self, request: Mapping[str, Any]) -> Reply:
        """This reply with its body built from ``request`` when it has a ``render`` hook."""
        if self.render is None:
            return self
        return Reply(self.status, self.render(request), dict(self.headers), self.delay)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    received_at: float  # time.monotonic()

    @property
    def user_text(self) -> str:
        """The user message (of a Messages or a Chat Completions request)."""
        content = next(m for m in self.body["messages"] if m["role"] == "user")["content"]
        if isinstance(content, str):
            return content
        return "".join(part.get("text", "") for part in content)

    @property
    def system_blocks(self) -> list[dict[str, Any]]:
        if "system" not in self.body:  # Chat Completions: the system message
            chat = [m["content"] for m in self.body.get("messages", []) if m["role"] == "system"]
            return [{"type": "text", "text": text} for text in chat]
        system = self.body["system"]
        return [{"type": "text", "text": system}] if isinstance(system, str) else list(system)


# --- reply builders -------------------------------------------------------------------------
def tool_reply(
    tool_input: Any,
    *,
    tool_name: str = "record_claims",
    model: str | None = None,
    usage: Mapping[str, int] | None = None,
    stop_reason: str = "tool_use",
) -> Reply:
    """A 200 message whose content is one ``tool_use`` block carrying ``tool_input``."""
    return Reply(
        200,
        {
            "id": f"msg_fake_{next(_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [
                {
                    "type": "tool_use",
                    "id": f"toolu_fake_{next(_ids):06d}",
                    "name": tool_name,
                    "input": tool_input,
                }
            ],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": None if usage is None else dict(usage),
        },
    )


def units_reply(
    units: Iterable[tuple[int, Iterable[tuple[str, bool, str | None] | Mapping[str, Any]]]],
    **kwargs: Any,
) -> Reply:
    """A groundedness verdict exactly as given: ``(unit id, claims)`` entries, in order, each
    claim a ``(claim, entailed, evidence)`` triple or a ready dict (repeats, unknown and missing
    units are sent as scripted)."""
    return tool_reply(
        {
            "units": [
                {"unit": uid, "claims": [_claim_dict(c) for c in claims]} for uid, claims in units
            ]
        },
        **kwargs,
    )


def _claim_dict(c: tuple[str, bool, str | None] | Mapping[str, Any]) -> dict[str, Any]:
    return (
        dict(c) if isinstance(c, Mapping) else {"claim": c[0], "entailed": c[1], "evidence": c[2]}
    )


def claims_reply(
    claims: Iterable[tuple[str, bool, str | None] | Mapping[str, Any]], **kwargs: Any
) -> Reply:
    """A groundedness verdict from a flat list of claims, filed under the request's units when
    it is served, as a cooperative judge would: a dict's ``unit`` key wins; otherwise, for given
    claims (calibration) the n-th claim goes to unit n, and for an answer each claim goes to the
    unit sharing most words with it (the first on a tie). Every unit of the request gets an
    entry, with no claims when none was filed under it."""
    items = [_claim_dict(c) for c in claims]

    def render(request: Mapping[str, Any]) -> Any:
        units = _request_units(request)
        ids = [uid for uid, _ in units] or [1]
        filed: dict[int, list[dict[str, Any]]] = {uid: [] for uid in ids}
        given = _is_claims_mode(request)
        for n, item in enumerate(items):
            item = dict(item)
            uid = item.pop("unit", None)
            if uid is None:
                if given:
                    uid = ids[min(n, len(ids) - 1)]
                else:
                    w = words(item["claim"])
                    uid = max(units, key=lambda u: len(words(u[1]) & w))[0] if units else 1
            filed.setdefault(uid, []).append(item)
        return {"units": [{"unit": uid, "claims": cl} for uid, cl in filed.items()]}

    reply = tool_reply({"units": []}, **kwargs)
    body = reply.body

    def render_message(request: Mapping[str, Any]) -> Any:
        message = json.loads(json.dumps(body))
        message["content"][0]["input"] = render(request)
        return message

    reply.render = render_message
    return reply


def text_reply(text: str, **kwargs: Any) -> Reply:
    """A 200 message with only a text block (no tool call): malformed for the judge."""
    reply = tool_reply({}, **kwargs)
    reply.body["content"] = [{"type": "text", "text": text}]
    reply.body["stop_reason"] = "end_turn"
    return reply


def error_reply(
    status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
) -> Reply:
    return Reply(
        status,
        {"type": "error", "error": {"type": error_type, "message": message}},
        dict(headers or {}),
    )


def rate_limited(retry_after: float | None = None, *, milliseconds: bool = False) -> Reply:
    headers: dict[str, str] = {}
    if retry_after is not None:
        if milliseconds:
            headers["retry-after-ms"] = str(int(retry_after * 1000))
        else:
            headers["retry-after"] = f"{retry_after:g}"
    return error_reply(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
        headers,
    )


def overloaded(retry_after: float | None = None) -> Reply:
    headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
    return error_reply(529, "overloaded_error", "Overloaded", headers)


def server_error(status: int = 500) -> Reply:
    return error_reply(status, "api_error", "Internal server error")


def malformed_json() -> Reply:
    """A 200 with a JSON content type and a body cut off mid-way."""
    return Reply(200, b'{"id": "msg_fake_cut", "type": "message", "content": [{"type": "tool_u')


# --- default responders ---------------------------------------------------------------------
_DOC = re.compile(r'<document index="\d+">\n(.*?)\n</document>', re.DOTALL)
_ANSWER = re.compile(r"<answer>\n(.*?)\n</answer>", re.DOTALL)
_CLAIM = re.compile(r'<claim index="(\d+)">(.*?)</claim>', re.DOTALL)
_UNIT = re.compile(r'<unit id="(\d+)">(.*?)</unit>', re.DOTALL)


def parse_units(text: str) -> list[tuple[int, str]]:
    """The numbered units of a groundedness message: the answer's units, or the given claims."""
    found = _UNIT.findall(text) or _CLAIM.findall(text)
    return [(int(i), html.unescape(t)) for i, t in found]


def parse_user_message(text: str) -> tuple[list[str], str | None, list[str] | None]:
    """(context documents, answer or None, given claims or None) from a groundedness message;
    the answer is its units' texts joined by spaces."""
    docs = [html.unescape(d) for d in _DOC.findall(text)]
    answer = _ANSWER.search(text)
    claims = _CLAIM.findall(text)
    units = _UNIT.findall(text)
    return (
        docs,
        None if answer is None else " ".join(html.unescape(t) for _, t in units),
        [html.unescape(c) for _, c in claims] if claims else None,
    )


def _user_text(request: Mapping[str, Any]) -> str:
    content = request["messages"][0]["content"]
    return (
        content
        if isinstance(content, str)
        else "".join(b.get("text", "") for b in content if isinstance(b, dict))
    )


def _request_units(request: Mapping[str, Any]) -> list[tuple[int, str]]:
    return parse_units(_user_text(request))


def _is_claims_mode(request: Mapping[str, Any]) -> bool:
    return "<claims>" in _user_text(request)


def _best_document(claim: str, docs: Sequence[str]) -> str | None:
    w = words(claim)
    return max(docs, key=lambda d: len(words(d) & w)) if docs else None


def _tool_name(request: Mapping[str, Any]) -> str:
    return str(request.get("tool_choice", {}).get("name", "record_claims"))


def _other_tools(request: Mapping[str, Any], name: str) -> Reply:
    if name == "record_relevancy":
        return tool_reply(
            {"needs": [{"need": "the question", "addressed": True, "reason": "answered"}]},
            tool_name=name,
        )
    return tool_reply({"claims": [], "reference_facts": []}, tool_name=name)


def entail_all(request: Mapping[str, Any]) -> Reply:
    """Every answer unit (or given claim) one claim, entailed, quoting in full the context
    document sharing most words with it; relevancy: addressed; correctness: nothing to compare
    (score 1.0)."""
    name = _tool_name(request)
    if name != "record_claims":
        return _other_tools(request, name)
    docs, _, _ = parse_user_message(_user_text(request))
    return units_reply(
        [(uid, [(text, True, _best_document(text, docs))]) for uid, text in _request_units(request)]
    )


def lexical_responder(request: Mapping[str, Any]) -> Reply:
    """Verdicts of the lexical judge (support >= 0.6), with its verbatim evidence."""
    name = _tool_name(request)
    if name != "record_claims":
        return _other_tools(request, name)
    docs, _, _ = parse_user_message(_user_text(request))
    judge = LexicalJudge()
    entries = []
    for uid, text in _request_units(request):
        v = judge.judge_claims([text], docs).claims[0]
        entries.append((uid, [(v.claim, v.judge_entailed, v.evidence)]))
    return units_reply(entries)


# --- the server -----------------------------------------------------------------------------
def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


class FakeAnthropic:
    """The fake API on 127.0.0.1 (ephemeral port); see the module docstring."""

    def __init__(
        self,
        responder: Callable[[Mapping[str, Any]], Reply] | None = entail_all,
        *,
        model_aliases: Mapping[str, str] | None = None,
        aws: AwsAccount | None = None,
        vertex: VertexProject | None = None,
    ) -> None:
        self.responder = responder
        self.aws = aws or AwsAccount()
        self.vertex = vertex or VertexProject()
        self.model_aliases = dict(DEFAULT_ALIASES if model_aliases is None else model_aliases)
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._cached_prefixes: set[str] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""
        # The Message Batches endpoints (anthropic_batches): each request answered as above.
        self.batches = BatchEndpoints(self._answer_params)

    # lifecycle
    def start(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Replies go out in two writes (headers, body): with Nagle's algorithm on, the
            # client's delayed ACK holds the second for ~40 ms. A real API server does not.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                fake._handle(self)

            def do_GET(self) -> None:
                fake._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True, name="fake-anthropic"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # scripting
    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    # serving
    def _next_reply(self, body: Any) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft().resolved(body if isinstance(body, dict) else {})
        if self.responder is None or not isinstance(body, dict):
            return error_reply(500, "api_error", "fake: no scripted reply and no responder")
        return self.responder(body).resolved(body)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.requests.append(
                RecordedRequest(handler.command, handler.path, headers, body, time.monotonic())
            )
        if BatchEndpoints.handles(handler.path):
            self._handle_batches(handler, body, headers)
            return
        where = route(handler.command, handler.path)
        if where is not None and where.wire == "google_token":
            status, token = google_token(self.vertex, raw)
            self._send_json(handler, status, json.dumps(token).encode("utf-8"))
            return
        # What the responders read: a Messages API request (the model from the path on
        # Bedrock and Vertex AI; a Chat Completions request translated).
        request: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
        if where is not None and where.wire == "openai":
            request = chat_as_messages(request)
        elif where is not None and where.model is not None:
            request["model"] = where.model
        if where is None:
            reply = error_reply(404, "not_found_error", f"fake: no route {handler.path}")
        elif (problem := self._auth_problem(where, handler, headers, raw)) is not None:
            reply = error_reply(*problem)
        elif not isinstance(body, dict):
            reply = error_reply(400, "invalid_request_error", "fake: body is not JSON")
        elif where.wire in ("bedrock", "vertex") and not body.get("anthropic_version"):
            reply = error_reply(400, "invalid_request_error", "anthropic_version: Field required")
        elif where.wire in ("bedrock", "vertex") and "model" in body:
            reply = error_reply(
                400, "invalid_request_error", "model: Extra inputs are not permitted"
            )
        else:
            reply = self._next_reply(request)
        payload = self._finish(reply, request)
        extra: dict[str, str] = {}
        if where is not None and where.wire in ("openai", "bedrock"):
            payload, extra = self._translate(where.wire, payload, body)
        if reply.delay:
            time.sleep(reply.delay)
        try:
            handler.send_response(reply.status)
            handler.send_header("content-type", "application/json")
            handler.send_header("request-id", f"req_fake_{next(_ids):06d}")
            for key, value in {**reply.headers, **extra}.items():
                handler.send_header(key, value)
            handler.send_header("content-length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    @staticmethod
    def _send_json(handler: BaseHTTPRequestHandler, status: int, payload: bytes) -> None:
        try:
            handler.send_response(status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _auth_problem(
        self,
        where: Route,
        handler: BaseHTTPRequestHandler,
        headers: Mapping[str, str],
        raw: bytes,
    ) -> tuple[int, str, str] | None:
        """(status, error type, message) refusing the request's credentials, else None."""
        if where.wire == "bedrock":
            if headers.get("authorization", "").startswith("Bearer "):
                return None  # a Bedrock API key
            url = f"http://{headers.get('host', '')}{handler.path}"
            why = check_sigv4(self.aws, handler.command, url, headers, raw)
            return None if why is None else (403, "authentication_error", why)
        if where.wire == "vertex":
            why = check_vertex(self.vertex, where, headers)
            return None if why is None else (401, "authentication_error", why)
        if "x-api-key" not in headers and "authorization" not in headers:
            return (401, "authentication_error", "fake: no API key sent")
        return None

    @staticmethod
    def _translate(wire: str, payload: bytes, body: Any) -> tuple[bytes, dict[str, str]]:
        """A Messages API response body as ``wire`` sends it (bytes that are not JSON pass)."""
        try:
            message = json.loads(payload)
        except json.JSONDecodeError:
            return payload, {}
        if wire == "bedrock":
            translated, headers = bedrock_error(message)
            return json.dumps(translated).encode("utf-8"), headers
        json_mode = isinstance(body, dict) and "tools" not in body
        return json.dumps(messages_as_chat(message, json_mode=json_mode)).encode("utf-8"), {}

    def _answer_params(self, params: Mapping[str, Any]) -> tuple[int, Any]:
        """What ``POST /v1/messages`` answers for ``params`` (status, parsed body)."""
        reply = self._next_reply(dict(params))
        return reply.status, json.loads(self._finish(reply, params))

    def _handle_batches(
        self, handler: BaseHTTPRequestHandler, body: Any, headers: Mapping[str, str]
    ) -> None:
        if "x-api-key" not in headers and "authorization" not in headers:
            status, payload, kind = (
                401,
                json.dumps(
                    error_reply(401, "authentication_error", "fake: no API key sent").body
                ).encode(),
                "application/json",
            )
        else:
            status, payload, kind = self.batches.handle(
                handler.command, handler.path, body, self.base_url
            )
        try:
            handler.send_response(status)
            handler.send_header("content-type", kind)
            handler.send_header("request-id", f"req_fake_{next(_ids):06d}")
            handler.send_header("content-length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _finish(self, reply: Reply, request: Mapping[str, Any]) -> bytes:
        if isinstance(reply.body, bytes):
            return reply.body
        body = json.loads(json.dumps(reply.body))  # a copy: replies may be reused
        if isinstance(body, dict) and body.get("type") == "message":
            requested = str(request.get("model", "claude-haiku-4-5"))
            if body.get("model") is None:
                body["model"] = self.model_aliases.get(requested, requested)
            if body.get("usage") is None:
                body["usage"] = self._usage(request, body)
        return json.dumps(body).encode("utf-8")

    def _usage(self, request: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, int]:
        system = request.get("system", [])
        blocks = [{"text": system}] if isinstance(system, str) else list(system)
        prefix = json.dumps(request.get("tools", [])) + "".join(b.get("text", "") for b in blocks)
        total = _estimate(json.dumps(request.get("messages", []))) + _estimate(prefix)
        created = read = 0
        if any("cache_control" in b for b in blocks):
            with self._lock:
                if prefix in self._cached_prefixes:
                    read = _estimate(prefix)
                else:
                    self._cached_prefixes.add(prefix)
                    created = _estimate(prefix)
        return {
            "input_tokens": total - created - read,
            "output_tokens": _estimate(json.dumps(body.get("content", []))),
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
        }
