"""A conversation's earlier turns as evidence for its later ones.

A follow-up turn ("And on the Team plan?") is often answered from the passage an earlier turn of
the same session retrieved. Judged against its own turn's context only, such an answer reads as
a hallucination. The rules, exactly:

* A trace belongs to a session when it carries ``session.id`` or ``gen_ai.conversation.id``
  (:attr:`~ragtrace_consumers.model.RagTrace.session_id`).
* Every recognised turn of a session records its own context chunks that have text
  (:func:`own_turn`), whether or not it is sampled for judging: a later turn may rest on it.
* A turn that is judged is judged once, against its own context followed by the chunks of at
  most ``max_turns`` earlier turns of its session that ended before it and at most
  ``max_age_s`` earlier, newest turn first (:func:`with_earlier_turns`); a chunk already in the
  context (same ID and text) is not repeated. One judge call per turn, never one per earlier
  turn; the cache key covers the whole context, so the same turn re-judged hits the cache.
* An answer unit is *supported by an earlier turn* when it is supported and every entailed
  claim of it quotes evidence found in no chunk of its own turn but in a chunk of an earlier
  one (:func:`earlier_turn_units`): the unit verdict and the web view say which turn.

The bounds keep a session's cost flat: the store keeps at most ``max_turns`` turns per session
for ``max_age_s``, and a turn's context grows by at most ``max_turns`` turns' chunks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ragtrace.evaluation.judges import GroundednessResult, quote_found
from ragtrace_consumers.model import Chunk, RagTrace, SessionTurn

__all__ = ["earlier_turn_units", "earlier_turns", "own_turn", "with_earlier_turns"]


def own_turn(trace: RagTrace) -> tuple[str, SessionTurn] | None:
    """What ``trace`` leaves for the later turns of its session, with that session's ID: its
    own context chunks that have text. None when the trace is in no session or has no such
    chunk."""
    if trace.session_id is None:
        return None
    chunks = tuple(
        Chunk(c.id, c.text, c.score, c.hashed)
        for c in trace.context
        if c.turn is None and c.text is not None and c.text.strip()
    )
    if not chunks:
        return None
    return trace.session_id, SessionTurn(trace.trace_id, trace.ended_ns, chunks)


def with_earlier_turns(trace: RagTrace, turns: Sequence[SessionTurn]) -> RagTrace:
    """``trace`` with the chunks of ``turns`` (newest first) appended to its context, each
    marked with the turn that retrieved it; chunks already present are left out."""
    seen = {(c.id, c.text) for c in trace.context}
    extra: list[Chunk] = []
    for turn in turns:
        if turn.trace_id == trace.trace_id:
            continue
        for c in turn.chunks:
            if (c.id, c.text) not in seen:
                seen.add((c.id, c.text))
                extra.append(replace(c, turn=turn.trace_id))
    if not extra:
        return trace
    return replace(trace, context=(*trace.context, *extra))


def earlier_turns(trace: RagTrace) -> tuple[str, ...]:
    """The earlier turns whose chunks ``trace``'s context holds, in context order."""
    return tuple(dict.fromkeys(c.turn for c in trace.context if c.turn is not None))


def earlier_turn_units(result: GroundednessResult, context: Sequence[Chunk]) -> Mapping[int, str]:
    """Unit ID -> the earlier turn (trace ID) whose evidence alone supports that unit (see the
    module rules). Empty when the context holds no earlier turn's chunks."""
    own = [c.text for c in context if c.turn is None and c.text is not None]
    earlier = [(c.turn, c.text) for c in context if c.turn is not None and c.text is not None]
    if not earlier:
        return {}
    out: dict[int, str] = {}
    for unit in result.units:
        if not unit.supported:
            continue
        claims = [c for c in result.claims if c.unit == unit.id and c.entailed]
        turns = [_earlier_only(c.evidence, own, earlier) for c in claims]
        if claims and all(t is not None for t in turns):
            out[unit.id] = str(turns[0])
    return out


def _earlier_only(
    quote: str | None, own: Sequence[str], earlier: Sequence[tuple[str, str]]
) -> str | None:
    """The first earlier turn whose chunk holds ``quote``, when no chunk of the own turn does."""
    if quote_found(quote, own):
        return None
    return next((turn for turn, text in earlier if quote_found(quote, [text])), None)
