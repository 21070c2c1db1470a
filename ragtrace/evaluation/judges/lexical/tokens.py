"""The offline judge's tokens: normalised numbers, lemma keys and rarity weights.

:func:`tokens` turns a text into its distinct content *tokens*. Each token has

* ``keys``: the forms under which it matches a source token: the term of
  :func:`ragtrace.evaluation.judges.terms.term` (case-folded, Arabic clitics and spelling
  variants folded, a Latin plural reduced, CJK as bigrams) and its ``simplemma`` lemma (English or
  Arabic by script), so "carried" matches "carries" and "قرارات" matches "قرار";
* ``weight``: how much the token says. Numbers weigh :data:`NUMBER_WEIGHT`, names
  (:func:`ragtrace.evaluation.judges.terms.named_entities`) :data:`NAME_WEIGHT`, other words by
  rarity: ``clip((ZIPF_CEILING - zipf) / ZIPF_SPAN, MIN_WEIGHT, MAX_WEIGHT)`` with the word's
  Zipf frequency from ``wordfreq`` (English or Arabic by script; a word of another script weighs
  1.0), so "carcinogenic" counts about three times "said"; stop words
  (:data:`ragtrace.evaluation.judges.terms.ENGLISH_STOP_WORDS`, Arabic likewise) are not tokens.

Numbers are normalised before words are read: digits of any script become ASCII, thousands
separators are dropped (``1,000`` → ``1000``), a decimal point stays (``5.68`` is one number, not
``5`` and ``68``), a unit written against its number is split off (``5.68m`` → ``5.68`` ``m``, as
``5.68 m``), ``%`` reads as ``percent`` and the number words one to twenty as digits. A source
text also offers a figure split by spacing as the number it reads as (``26 000`` and ``26, 000``
as ``26000``, ``1. 7`` as ``1.7``, besides their parts): text extracted from pages and PDFs
often spaces figures so.

Both word lists ship inside the ``wordfreq`` and ``simplemma`` wheels: nothing is downloaded. Both
are held packed (:mod:`ragtrace.evaluation.judges.lexical.packed`): the same Zipf frequencies
(:mod:`ragtrace.evaluation.judges.lexical.frequencies`) and the same lemmas, in a few MiB.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from ..terms import ARABIC_STOP_WORDS, ENGLISH_STOP_WORDS, named_entities, term
from ..text import word_list
from ._extra import LEXICAL_EXTRA, require
from .frequencies import zipf_frequency
from .packed import packed_table

__all__ = [
    "LEXICAL_EXTRA",
    "MAX_WEIGHT",
    "MIN_WEIGHT",
    "NAME_WEIGHT",
    "NUMBER_WEIGHT",
    "ZIPF_CEILING",
    "ZIPF_SPAN",
    "Token",
    "keys",
    "require",
    "spaced_figures",
    "tokens",
    "word_keys",
]

NUMBER_WEIGHT = 2.0
NAME_WEIGHT = 1.5
ZIPF_CEILING = 7.5
ZIPF_SPAN = 3.5
MIN_WEIGHT = 0.2
MAX_WEIGHT = 2.0

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?!\d)")
_SPACED_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,? \d{3})+(?![\d,])|(?<![\w.])\d+\. \d+(?!\d)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}
_STOP = ENGLISH_STOP_WORDS | ARABIC_STOP_WORDS


@dataclass(frozen=True, slots=True)
class Token:
    """One distinct content token: its normalised ``text`` (its term), match ``keys`` and
    ``weight``; ``number`` for a number (digits or a number word), ``figure`` for one written in
    digits, ``name`` for a name."""

    text: str
    keys: frozenset[str]
    weight: float
    number: bool = False
    figure: bool = False
    name: bool = False


def _ascii_digits(text: str) -> str:
    return "".join(
        str(unicodedata.decimal(c)) if unicodedata.category(c) == "Nd" and not c.isascii() else c
        for c in text
    )


def _is_arabic(word: str) -> bool:
    return any("\u0600" <= c <= "\u06ff" or "\ufb50" <= c <= "\ufeff" for c in word)


class _PackedDictionaries:
    """simplemma's dictionaries, each read from its packed table (a ``DictionaryFactory``)."""

    def get_dictionary(self, lang: str) -> Mapping[str, str]:
        return packed_table("simplemma", lang)


@cache
def _lemmatizer() -> Any:
    """simplemma's lemmatizer on its own dictionaries held packed (the same lemmas, without a
    dict of every form); results are cached by _word."""
    simplemma = require("simplemma")
    strategy = require("simplemma.strategies.default").DefaultStrategy(
        dictionary_factory=_PackedDictionaries()
    )
    return simplemma.Lemmatizer(cache_max_size=0, lemmatization_strategy=strategy)


def _lemma(word: str) -> str:  # cached by its one caller, _word
    if not word.isalpha():
        return word
    lang = "ar" if _is_arabic(word) else "en"
    try:
        return str(_lemmatizer().lemmatize(word, lang=lang)).casefold()
    except ValueError:  # simplemma refuses some inputs (e.g. an empty lemma); keep the word
        return word


# Word caches of 16,384 entries hold a service's working vocabulary in a few MiB each (the 65,536
# they had grew a long-running serve by some 50 MiB on varied text); numbers are not cached here.
@lru_cache(maxsize=16384)
def _rarity(word: str) -> float:
    if _is_arabic(word):
        lang = "ar"
    elif all(c.isascii() or unicodedata.category(c)[0] == "M" or c.isalpha() for c in word) and (
        word.isascii() or all(ord(c) < 0x0250 for c in word)
    ):
        lang = "en"
    else:
        return 1.0
    zipf = zipf_frequency(word, lang)
    return min(MAX_WEIGHT, max(MIN_WEIGHT, (ZIPF_CEILING - zipf) / ZIPF_SPAN))


def _normalise_number(raw: str) -> str:
    raw = _THOUSANDS.sub("", raw).replace(",", ".")
    if "." in raw:
        raw = raw.rstrip("0").rstrip(".") if re.fullmatch(r"\d+\.\d+", raw) else raw
    return raw


@lru_cache(maxsize=16384)
def _word(word: str) -> tuple[str, frozenset[str]] | tuple[str, ...]:
    """A word's (term, match keys); the bigrams of an unspaced script; () for a stop word."""
    if word in _STOP:
        return ()
    if word in _NUMBER_WORDS:
        return (_NUMBER_WORDS[word], frozenset({_NUMBER_WORDS[word]}))
    terms = [t for t in term(word) if t not in _STOP]
    if len(terms) != 1:
        return tuple(terms)
    lemma = _lemma(word)
    return (terms[0], frozenset({terms[0], lemma, *term(lemma)}))


def _scan(text: str) -> tuple[str, list[str]]:
    """(the text with its numbers cut out, the normalised numbers)."""
    normalised = unicodedata.normalize("NFKC", text)
    if not normalised.isascii():
        normalised = _ascii_digits(normalised)
    normalised = normalised.replace("%", " percent ")
    numbers = [_normalise_number(m.group(0)) for m in _NUMBER.finditer(normalised)]
    return _NUMBER.sub(" ", normalised), numbers


@lru_cache(maxsize=256)  # a unit's tokens are read twice in its judgement (alignment, cues)
def tokens(text: str) -> tuple[Token, ...]:
    """The distinct content tokens of ``text`` (module docstring), numbers first."""
    rest, numbers = _scan(text)
    found: dict[str, Token] = {
        n: Token(n, frozenset({n}), NUMBER_WEIGHT, True, figure=True) for n in numbers
    }
    names = named_entities(rest)
    for word in word_list(rest):
        entry = _word(word)
        if not entry:
            continue
        if isinstance(entry[1], frozenset):
            key, keys = entry
            if key in found:
                continue
            if key.isdigit():
                found[key] = Token(key, keys, NUMBER_WEIGHT, True)
            else:
                name = key in names
                found[key] = Token(key, keys, NAME_WEIGHT if name else _rarity(word), name=name)
        else:  # an unspaced script: each bigram is a token
            for t in entry:
                assert isinstance(t, str)
                found.setdefault(t, Token(t, frozenset({t}), 1.0))
    return tuple(found.values())


def spaced_figures(text: str) -> frozenset[str]:
    """The figures of ``text`` split by spacing (thousands grouped with a space, "26, 000" or
    "1. 7" from text extraction), as the numbers they read as."""
    return frozenset(
        _normalise_number(re.sub(r"\s+", "", m.group(0)))
        for m in _SPACED_NUMBER.finditer(unicodedata.normalize("NFKC", text))
    )


@lru_cache(maxsize=2048)
def keys(text: str) -> frozenset[str]:
    """Every match key of the tokens of ``text`` (what a source window offers), without their
    weights: the same keys as :func:`tokens`, computed faster."""
    rest, numbers = _scan(text)
    out = set(numbers) | spaced_figures(text)
    for word in word_list(rest):
        entry = _word(word)
        if entry and isinstance(entry[1], frozenset):
            out |= entry[1]
        else:
            out.update(t for t in entry if isinstance(t, str))
    return frozenset(out)


def word_keys(word: str) -> frozenset[str]:
    """The match keys of one normalised word (:func:`ragtrace.evaluation.judges.text.words`);
    empty for a stop word."""
    entry = _word(word)
    if entry and isinstance(entry[1], frozenset):
        return entry[1]
    return frozenset(t for t in entry if isinstance(t, str))
