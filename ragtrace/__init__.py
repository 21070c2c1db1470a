"""ragtrace: online evaluation of retrieval-augmented generation on OpenTelemetry traces."""

from __future__ import annotations

from ragtrace.chunks import ChunkExtractionError, ExtractedChunk, extract_chunks

__version__ = "0.1.0"

__all__ = ["ChunkExtractionError", "ExtractedChunk", "__version__", "extract_chunks"]
