"""A DSPy 3 program written the way DSPy's docs show — ``dspy.Retrieve`` over a ColBERTv2
retrieval server and ``dspy.ChainOfThought("context, question -> response")`` — traced by
OpenInference's DSPy instrumentation. The LM is ``dspy.LM`` (LiteLLM) against a wire-level fake
of the OpenAI API answering in DSPy's field format; the ColBERTv2 server is a local fake
answering its ``GET ?query=&k=`` with the corpus passages (``pid`` the document ID).

``python -m tests.dialects.apps.dspy_app ENDPOINT``.
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import ask_all, provider
from tests.fakes.openai_server import FakeOpenAI

REASONING = "The context answers the question directly, so the reply restates it."


class _ColBERT(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        params = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        query, k = params["query"][0], int(params["k"][0])
        topk = [
            {"pid": d, "text": corpus.PASSAGES[d], "score": s}
            for d, s in zip(corpus.RETRIEVED[query], corpus.SCORES, strict=False)
        ][:k]
        body = json.dumps({"topk": topk}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def main(endpoint: str) -> None:
    import dspy
    from openinference.instrumentation.dspy import DSPyInstrumentor

    tp, ids = provider(endpoint, "dspy-app")
    DSPyInstrumentor().instrument(tracer_provider=tp)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)

    colbert = ThreadingHTTPServer(("127.0.0.1", 0), _ColBERT)
    threading.Thread(target=colbert.serve_forever, daemon=True).start()

    def reply(messages: list[dict[str, object]]) -> str:
        answer = corpus.ANSWERS[corpus.question_in(str(messages[-1]["content"]))]
        return (
            f"[[ ## reasoning ## ]]\n{REASONING}\n\n[[ ## response ## ]]\n{answer}\n\n"
            "[[ ## completed ## ]]"
        )

    class RAG(dspy.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.retrieve = dspy.Retrieve(k=3)
            self.respond = dspy.ChainOfThought("context, question -> response")

        def forward(self, question: str) -> Any:
            context = self.retrieve(question).passages
            return self.respond(context=context, question=question)

    with FakeOpenAI(reply) as api:
        lm = dspy.LM("openai/gpt-test", api_base=api.base_url, api_key="test-key", cache=False)
        url = f"http://127.0.0.1:{colbert.server_address[1]}/"
        dspy.configure(lm=lm, rm=dspy.ColBERTv2(url=url))
        rag = RAG()
        ask_all(corpus.QUESTIONS, lambda q: rag(question=q), ids, tp.force_flush)
    colbert.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
