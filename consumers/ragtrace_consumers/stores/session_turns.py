"""A session turn's evidence as bytes, the same in every store that keeps it."""

from __future__ import annotations

import orjson

from ragtrace_consumers.model import Chunk, SessionTurn

__all__ = ["decode_turn", "encode_turn"]


def encode_turn(turn: SessionTurn) -> bytes:
    """``turn`` as compact JSON: ``{"t": trace ID, "e": ended_ns, "c": [[id, text, score,
    hashed], ...]}``."""
    return orjson.dumps(
        {
            "t": turn.trace_id,
            "e": turn.ended_ns,
            "c": [[c.id, c.text, c.score, c.hashed] for c in turn.chunks],
        }
    )


def decode_turn(data: bytes | str) -> SessionTurn:
    """The inverse of :func:`encode_turn`."""
    raw = orjson.loads(data)
    return SessionTurn(
        trace_id=str(raw["t"]),
        ended_ns=int(raw["e"]),
        chunks=tuple(
            Chunk(str(i), None if t is None else str(t), None if s is None else float(s), bool(h))
            for i, t, s, h in raw["c"]
        ),
    )
