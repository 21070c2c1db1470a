"""A local HTTP server speaking OpenAI's Chat Completions wire format (``POST
/v1/chat/completions``, non-streamed), so the real ``openai`` client and the instrumentations
wrapping it run in tests.

    with FakeOpenAI(lambda messages: "It is 90 days.") as api:
        client = openai.OpenAI(base_url=api.base_url, api_key="test")

The responder maps the request's messages to the assistant's reply text, or to a whole
assistant message (a dict: ``{"tool_calls": [...]}`` scripts an agent's tool calls, answered
with ``finish_reason`` ``tool_calls``); every response gets an ID ``chatcmpl-<n>`` (the
instrumentations record it as ``gen_ai.response.id``).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from typing_extensions import Self

__all__ = ["FakeOpenAI"]

Responder = Callable[[list[dict[str, Any]]], "str | dict[str, Any]"]


class FakeOpenAI:
    """Serves Chat Completions, and the Responses API (``POST /v1/responses``, non-streamed;
    the OpenAI Agents SDK's default) from the same responder: a Responses request's input
    items are shown to it as Chat Completions messages, and its reply becomes the response's
    output items."""

    def __init__(self, responder: Responder) -> None:
        self._responder = responder
        self._ids = itertools.count(1)
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                fake.requests.append(body)
                if self.path.rstrip("/") == "/v1/responses":
                    reply = fake._responder(_chat_messages(body))
                    self._send(200, _response(next(fake._ids), body, reply))
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found", "type": "not_found"}})
                    return
                reply = fake._responder(body.get("messages", []))
                message = (
                    {"role": "assistant", "content": None, **reply}
                    if isinstance(reply, dict)
                    else {"role": "assistant", "content": reply}
                )
                n = next(fake._ids)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "created": 1700000000,
                        "model": body.get("model", "gpt-test"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "tool_calls"
                                if message.get("tool_calls")
                                else "stop",
                                "logprobs": None,
                                "message": message,
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _chat_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Responses API request's instructions and input items as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    if body.get("instructions"):
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input", [])
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items:
        kind = item.get("type", "message")
        if kind == "message":
            out.append({"role": item["role"], "content": item["content"]})
        elif kind == "function_call":
            call = {"name": item["name"], "arguments": item["arguments"]}
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": item["call_id"], "type": "function", "function": call}],
                }
            )
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
    return out


def _response(n: int, body: dict[str, Any], reply: str | dict[str, Any]) -> dict[str, Any]:
    """A completed Responses API response whose output is ``reply``: a message, or the
    function calls of an assistant message with ``tool_calls``."""
    output: list[dict[str, Any]]
    if isinstance(reply, str):
        text = {"type": "output_text", "text": reply, "annotations": []}
        output = [
            {
                "type": "message",
                "id": f"msg_{n}",
                "status": "completed",
                "role": "assistant",
                "content": [text],
            }
        ]
    else:
        output = [
            {
                "type": "function_call",
                "id": f"fc_{n}_{i}",
                "call_id": call["id"],
                "name": call["function"]["name"],
                "arguments": call["function"]["arguments"],
                "status": "completed",
            }
            for i, call in enumerate(reply.get("tool_calls", []))
        ]
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1700000000,
        "status": "completed",
        "model": body.get("model", "gpt-test"),
        "instructions": body.get("instructions"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }
