"""The model judges: one backend per API, over the flow they share.

``judge`` is :class:`ModelJudge` (segment, prompt, call, parse, check, score — whatever the
API); the backends are ``anthropic`` (the Claude judge on the Anthropic API, Bedrock or Vertex AI,
with ``claude_clients`` and ``caching``), ``anthropic_batch`` (the Message Batches API) and
``openai_compat`` (any OpenAI-compatible endpoint); ``retry`` owns their retries and ``pricing``
what their calls cost. The backends are imported from their modules (the package keeps them
lazy: they are the ``judge`` extra's); the shared judge modules never import this package.
"""

from __future__ import annotations

from .judge import CallRecord, ModelJudge
from .pricing import ModelPrice, PriceTable, load_prices
from .retry import CallBudget

__all__ = ["CallBudget", "CallRecord", "ModelJudge", "ModelPrice", "PriceTable", "load_prices"]
