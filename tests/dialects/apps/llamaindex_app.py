"""A LlamaIndex query engine (VectorStoreIndex over TextNodes whose ``id_`` is the corpus ID,
MockEmbedding, a MockLLM that answers from the corpus table) traced by
openinference-instrumentation-llama-index.

``python -m tests.dialects.apps.llamaindex_app ENDPOINT MODE``; MODE ``stream`` (the answer
is on the inner ``stream_complete`` span) or ``plain``.
"""

from __future__ import annotations

import sys

from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import ask_all, provider


def main(endpoint: str, mode: str) -> None:
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen
    from llama_index.core.base.response.schema import StreamingResponse
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    class CorpusLLM(MockLLM):
        """MockLLM whose generated text is the corpus answer to the prompt's question."""

        def _generate_text(self, length: int) -> str:
            return ""

        def complete(
            self, prompt: str, formatted: bool = False, **kwargs: object
        ) -> CompletionResponse:
            response: CompletionResponse = super().complete(
                corpus.ANSWERS[corpus.question_in(prompt)]
            )
            return response

        def stream_complete(
            self,
            prompt: str,
            formatted: bool = False,
            **kwargs: object,
        ) -> CompletionResponseGen:
            stream: CompletionResponseGen = super().stream_complete(
                corpus.ANSWERS[corpus.question_in(prompt)]
            )
            return stream

    Settings.llm = CorpusLLM(max_tokens=None)
    Settings.embed_model = MockEmbedding(embed_dim=8)
    nodes = {d: TextNode(id_=d, text=t) for d, t in corpus.PASSAGES.items()}
    VectorStoreIndex(list(nodes.values()))  # built before tracing: not part of any question

    class CorpusRetriever(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [
                NodeWithScore(node=nodes[d], score=s)
                for d, s in zip(
                    corpus.RETRIEVED[query_bundle.query_str], corpus.SCORES, strict=False
                )
            ]

    tp, ids = provider(endpoint, f"llamaindex-{mode}")
    LlamaIndexInstrumentor().instrument(tracer_provider=tp)
    engine = RetrieverQueryEngine.from_args(CorpusRetriever(), streaming=mode == "stream")

    def ask(q: str) -> str:
        response = engine.query(q)
        if mode == "stream":
            assert isinstance(response, StreamingResponse)
            return "".join(response.response_gen)
        return str(response)

    ask_all(corpus.QUESTIONS, ask, ids, tp.force_flush)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
