"""Content words and key terms of a text, script-aware: what a claim and its evidence must share.

Words come from :func:`ragtrace.evaluation.judges.text.word_list` (NFKC, case-folded, combining
marks and tatweel dropped). Then, per script:

* **digits** of any script become ASCII (``٩٠`` → ``90``) and thousands separators are dropped
  (``1,000`` → ``1000``); a unit of up to three letters written against its number is split off
  (``5.68m`` reads as ``5.68 m``); a word holding a digit is a *number*;
* **Arabic**: alef variants ``أ إ آ ٱ`` → ``ا``, ``ى`` → ``ي``, ``ة`` → ``ه``; one leading
  conjunction ``و``/``ف`` and then one article or preposition+article (``ال``, ``بال``, ``كال``,
  ``لل``, ``بـ``/``لـ`` before ``ال``) are stripped from words long enough to keep a stem of three
  letters, so ``والسنة`` and ``السنة`` and ``سنة`` match;
* **Latin**: a plural ``-s``/``-es``/``-ies`` is reduced (``logs`` → ``log``), nothing else;
* **Han, Hiragana, Katakana, Thai** (no spaces between words): a run becomes its overlapping
  character bigrams.

A *content word* is any resulting term that is not in the English or Arabic stop-word lists
below (function words, pronouns, auxiliaries). Negation words (``not``, ``لا``) are stop words
too: a negated claim is the judge's to catch, these checks cannot see it.

*Named entities* (Latin script only: Arabic has no letter case) are words written with a capital
letter that do not open a sentence, and words mixing letters and digits (``v1``, ``S3``).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .text import word_list

__all__ = [
    "ARABIC_STOP_WORDS",
    "ENGLISH_STOP_WORDS",
    "content_words",
    "named_entities",
    "numbers",
    "term",
]

ENGLISH_STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "either",
        "else",
        "ever",
        "every",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "ll",
        "me",
        "might",
        "more",
        "most",
        "must",
        "mustn",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "re",
        "s",
        "same",
        "shall",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "such",
        "t",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "though",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "very",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "won",
        "would",
        "wouldn",
        "yes",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "ve",
        "d",
        "m",
        "o",
        "y",
    ]
)

ARABIC_STOP_WORDS = frozenset(
    [
        "في",
        "من",
        "الى",
        "إلى",
        "على",
        "عن",
        "مع",
        "هذا",
        "هذه",
        "ذلك",
        "تلك",
        "هو",
        "هي",
        "هم",
        "هن",
        "انت",
        "أنت",
        "انا",
        "أنا",
        "نحن",
        "انه",
        "أنه",
        "انها",
        "أنها",
        "ان",
        "أن",
        "إن",
        "كان",
        "كانت",
        "يكون",
        "تكون",
        "ما",
        "لا",
        "لم",
        "لن",
        "قد",
        "ثم",
        "او",
        "أو",
        "و",
        "ف",
        "ب",
        "ل",
        "ك",
        "كل",
        "بعض",
        "التي",
        "الذي",
        "الذين",
        "اللذين",
        "اللتين",
        "عند",
        "لك",
        "له",
        "لها",
        "لهم",
        "لكم",
        "لنا",
        "به",
        "بها",
        "بهم",
        "منه",
        "منها",
        "فيه",
        "فيها",
        "عليه",
        "عليها",
        "اي",
        "أي",
        "اذا",
        "إذا",
        "حتى",
        "بين",
        "كما",
        "لكن",
        "بل",
        "هل",
        "نعم",
        "ايضا",
        "أيضا",
        "غير",
        "مثل",
        "هنا",
        "هناك",
    ]
)

_ALEF = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ة": "ه"})
_AR_PREFIXES = ("وال", "فال", "بال", "كال", "لل", "ال")
_LATIN_WORD = re.compile(r"[^\W\d_][\w'-]*|\d[\w-]*", re.UNICODE)
_THOUSANDS = re.compile(r"(?<=\d)[,\u066c\u202f'](?=\d{3}(?!\d))")
# a unit written against its number ("5.68m", "20mg") reads as the number then the unit
_UNIT_SUFFIX = re.compile(r"(?<=\d)(?=[^\W\d_]{1,3}\b)")
_SENTENCE_START = re.compile(r"(?:^|[.!?؟…:;]\s+|\n\s*)$")


def _ascii_digits(word: str) -> str:
    if word.isascii():
        return word
    return "".join(
        str(unicodedata.decimal(c)) if unicodedata.category(c) == "Nd" else c for c in word
    )


_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0600, 0x06FF, "ARABIC"),
    (0x0750, 0x077F, "ARABIC"),
    (0x08A0, 0x08FF, "ARABIC"),
    (0xFB50, 0xFDFF, "ARABIC"),
    (0xFE70, 0xFEFF, "ARABIC"),
    (0x0E00, 0x0E7F, "THAI"),
    (0x3040, 0x309F, "HIRAGANA"),
    (0x30A0, 0x30FF, "KATAKANA"),
    (0x31F0, 0x31FF, "KATAKANA"),
    (0xFF66, 0xFF9F, "KATAKANA"),
    (0x3400, 0x4DBF, "CJK"),
    (0x4E00, 0x9FFF, "CJK"),
    (0xF900, 0xFAFF, "CJK"),
    (0x20000, 0x3FFFF, "CJK"),
)


def _script(ch: str) -> str:
    code = ord(ch)
    if code < 0x0600:
        return "OTHER"
    for low, high, script in _RANGES:
        if low <= code <= high:
            return script
    return "OTHER"


def _arabic(word: str) -> str:
    word = word.translate(_ALEF)
    if len(word) > 4 and word[0] in "وف" and not word.startswith("ال"):
        word = word[1:]
    for prefix in _AR_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= 3:
            return word[len(prefix) :]
    return word


def _latin(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_UNSPACED = ("CJK", "HIRAGANA", "KATAKANA", "THAI")


def term(word: str) -> list[str]:
    """The normalised term(s) of one word from ``word_list`` (bigrams for unspaced scripts)."""
    if word.isascii():
        return [_latin(word)] if word else []
    word = _ascii_digits(word)
    if not word:
        return []
    if any(_script(c) in _UNSPACED for c in word) and not all(
        _script(c) in _UNSPACED for c in word
    ):
        # e.g. 保存期間は90日: split at script changes so digits stay whole numbers
        parts = re.findall(r"\d+|[^\d]+", word)
        return [t for part in parts for t in term(part)]
    script = _script(word[0])
    if script in _UNSPACED:
        return [word] if len(word) < 2 else [word[i : i + 2] for i in range(len(word) - 1)]
    if script == "ARABIC":
        return [_arabic(word)]
    return [_latin(word)]


def _is_stop(word: str) -> bool:
    return word in ENGLISH_STOP_WORDS or word.translate(_ALEF) in _ARABIC_STOP


_ARABIC_STOP = frozenset(w.translate(_ALEF) for w in ARABIC_STOP_WORDS)


@lru_cache(maxsize=2048)
def content_words(text: str) -> frozenset[str]:
    """The distinct content terms of ``text`` (module docstring); cached, as the checks ask for
    the same claim, unit and quote several times."""
    out: set[str] = set()
    for word in word_list(_UNIT_SUFFIX.sub(" ", _THOUSANDS.sub("", text))):
        if _is_stop(word):
            continue
        for t in term(word):
            if not _is_stop(t):
                out.add(t)
    return frozenset(out)


@lru_cache(maxsize=4096)
def numbers(text: str) -> frozenset[str]:
    """Content terms holding a digit (any script's digits, as ASCII)."""
    return frozenset(t for t in content_words(text) if any(c.isdigit() for c in t))


@lru_cache(maxsize=4096)
def named_entities(text: str) -> frozenset[str]:
    """Latin-script capitalised words not opening a sentence, and letter+digit words, as terms."""
    found: set[str] = set()
    normalised = unicodedata.normalize("NFKC", text)
    for match in _LATIN_WORD.finditer(normalised):
        word = match.group(0).strip("'-")
        if not word:
            continue
        mixed = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
        capital = (
            word[0].isupper()
            and word[0].isascii()
            and not _SENTENCE_START.search(normalised[: match.start()])
        )
        if mixed or capital:
            found.update(_terms_of(word))
    return frozenset(found)


def _terms_of(word: str) -> frozenset[str]:
    return content_words(word)
