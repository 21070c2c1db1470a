"""ragtrace: online evaluation of retrieval-augmented generation on OpenTelemetry traces.

Instrument an app with three decorators and, if it has no OpenTelemetry setup yet, one call::

    import ragtrace

    ragtrace.configure(service_name="support-bot")

    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict]: ...

    @ragtrace.generate
    def generate(query: str, chunks: list[dict]) -> str: ...

    @ragtrace.pipeline
    def answer(query: str) -> str:
        return generate(query, retrieve(query))

``docs/semantic-conventions.md`` lists every attribute the spans carry.
"""

from __future__ import annotations

from ragtrace._config import Settings
from ragtrace._context import set_attributes, set_question_id
from ragtrace._decorators import generate, pipeline, retrieve
from ragtrace._health import dropped_counts, error_counts, oversized_count
from ragtrace._setup import configure
from ragtrace._version import __version__
from ragtrace.chunks import ChunkExtractionError, ExtractedChunk, extract_chunks

__all__ = [
    "ChunkExtractionError",
    "ExtractedChunk",
    "Settings",
    "__version__",
    "configure",
    "dropped_counts",
    "error_counts",
    "extract_chunks",
    "generate",
    "oversized_count",
    "pipeline",
    "retrieve",
    "set_attributes",
    "set_question_id",
    "settings",
]


def settings() -> Settings:
    """The SDK settings in force (environment variables merged with ``configure``'s arguments)."""
    from ragtrace import _config

    return _config.current()
