"""When to mark the judge's fixed instruction block for prompt caching.

The Messages API caches a prefix only when it is at least the model's minimum cacheable length;
below it the request succeeds and nothing is cached. We add ``cache_control`` only when a
conservative (low) token estimate of the cached prefix — tool definition plus system
instructions — reaches that minimum, so a marker is never sent that cannot take effect.
"""

from __future__ import annotations

from .pricing import claude_model_name

__all__ = ["estimate_tokens", "min_cacheable_tokens", "should_cache"]

# Longest matching prefix wins; unknown models get the largest known minimum.
_MINIMUMS: dict[str, int] = {
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
    "claude-opus-4-5": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-0": 1024,
    "claude-opus-4-2025": 1024,
    "claude-opus-4-1": 1024,
    "claude-sonnet-4-0": 1024,
    "claude-sonnet-4-2025": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4-6": 2048,
    "claude-3-7-sonnet": 1024,
}
_UNKNOWN_MINIMUM = 4096
# English prose runs about 3.5–4 characters per Claude token; dividing by 5 under-estimates, and
# other scripts use more tokens per character, so the estimate stays on the low side.
_CHARS_PER_TOKEN_LOW = 5


def min_cacheable_tokens(model: str) -> int:
    """The model's minimum cacheable prefix (a Bedrock or Vertex AI ID by its Claude name)."""
    model = claude_model_name(model)
    keys = [k for k in _MINIMUMS if model.startswith(k)]
    return _MINIMUMS[max(keys, key=len)] if keys else _UNKNOWN_MINIMUM


def estimate_tokens(text: str) -> int:
    """A deliberately low estimate of the token count of ``text``."""
    return len(text) // _CHARS_PER_TOKEN_LOW


def should_cache(model: str, prefix_text: str) -> bool:
    return estimate_tokens(prefix_text) >= min_cacheable_tokens(model)
