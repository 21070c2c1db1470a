"""Question-text normalisation shared by the SDK (which hashes it) and the consumers (which match
labelled questions by it). Both sides must agree byte for byte, so there is exactly one copy."""

from __future__ import annotations

import hashlib
import string
import unicodedata

__all__ = ["normalize_question", "question_sha256"]

_ASCII_DROP = str.maketrans("", "", string.punctuation)


def normalize_question(text: str) -> str:
    """Return ``text`` in the form labelled questions are matched by.

    NFKC Unicode form, case-folded, every punctuation or symbol character removed, and runs of
    white space folded to one space with none at either end. So ``"How long are audit logs kept?"``
    and ``"  how LONG are audit-logs kept"`` differ only by the hyphen (removed, leaving the words
    joined), and full-width or composed forms match their plain equivalents.
    """
    if text.isascii():
        # ASCII is already NFKC; its punctuation and symbols are exactly string.punctuation.
        return " ".join(text.lower().translate(_ASCII_DROP).split())
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in folded
        if not unicodedata.category(ch).startswith(("P", "S"))
    )
    return " ".join(kept.split())


def question_sha256(text: str) -> str:
    """Hex SHA-256 of the normalised question: what the SDK records as ``ragtrace.query.sha256``."""
    return hashlib.sha256(normalize_question(text).encode("utf-8")).hexdigest()
