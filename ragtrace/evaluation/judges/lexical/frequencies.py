"""Zipf frequencies as ``wordfreq`` gives them, from its list held packed.

:func:`zipf_frequency` is ``wordfreq.zipf_frequency(word, lang)`` (the best list, minimum 0) with
the dict it looks words up in replaced by the packed table of the same list
(:func:`ragtrace.evaluation.judges.lexical.packed.packed_table`): the same tokeniser, digits
smashed and weighted by ``wordfreq``'s digit distribution, several tokens' frequencies combined,
rounded to three significant digits and then to the hundredth (``wordfreq``'s
``_word_frequency``, Apache-2.0). A test compares the two word by word.
"""

from __future__ import annotations

import math

from ._extra import require
from .packed import packed_table

__all__ = ["zipf_frequency"]


def _frequency(word: str, lang: str, minimum: float) -> float:
    wordfreq = require("wordfreq")
    tokens = wordfreq.lossy_tokenize(word, lang)
    if not tokens:
        return minimum
    table = packed_table("wordfreq", lang)
    one_over_result = 0.0
    for token in tokens:
        smashed = wordfreq.smash_numbers(token)
        bucket = table.get(smashed)
        if bucket is None:
            return minimum
        freq = wordfreq.cB_to_freq(-int(bucket))
        if smashed != token:
            freq *= wordfreq.digit_freq(token)
        one_over_result += 1.0 / freq
    freq = 1.0 / one_over_result
    if wordfreq.get_language_info(lang)["tokenizer"] == "jieba":
        freq *= wordfreq.INFERRED_SPACE_FACTOR ** -(len(tokens) - 1)
    unrounded = max(freq, minimum)
    if unrounded == 0.0:
        return 0.0
    leading_zeroes = math.floor(-math.log(unrounded, 10))
    return float(round(unrounded, leading_zeroes + 3))


def zipf_frequency(word: str, lang: str) -> float:
    """``wordfreq.zipf_frequency(word, lang)``, from the packed list (module docstring)."""
    wordfreq = require("wordfreq")
    return float(round(wordfreq.freq_to_zipf(_frequency(word, lang, wordfreq.zipf_to_freq(0))), 2))
