"""The offline judge's packed word lists (lexical/packed.py, lexical/frequencies.py): lookups at
every block boundary, the round trip through the child process, and the same answers as
wordfreq and simplemma give, word by word, on every word of the shipped human-labelled sets."""

from __future__ import annotations

import io
from functools import cache
from pathlib import Path

import pytest
import simplemma
import wordfreq

from ragtrace.evaluation.hallucination_sets import load_generic
from ragtrace.evaluation.judges.lexical import packed
from ragtrace.evaluation.judges.lexical.frequencies import zipf_frequency
from ragtrace.evaluation.judges.lexical.packed import (
    BLOCK,
    SOURCES,
    PackedTable,
    cache_dir,
    load_table,
    packed_table,
)
from ragtrace.evaluation.judges.lexical.tokens import _lemmatizer
from ragtrace.evaluation.judges.text import word_list

DATA = Path(__file__).resolve().parents[5] / "bench" / "data" / "hallucination"


def test_every_key_is_found_and_no_other() -> None:
    pairs = [(f"w{i:04d}", str(i)) for i in range(5 * BLOCK + 3)]
    table = PackedTable.of(reversed(pairs))
    assert len(table) == len(pairs) and list(table) == [k for k, _ in pairs]
    for key, value in pairs:  # first, inner and last records of every block
        assert table.get(key) == value and table[key] == value and key in table
    for absent in ("", "w", "w00000", "w0000a", "a", "z", "w0001\x01", 3):
        assert absent not in table
    assert table.get("zz", "default") == "default"
    with pytest.raises(KeyError):
        table["zz"]


def test_unicode_keys_and_values_and_a_repeated_key() -> None:
    table = PackedTable.of([("قرارات", "قرار"), ("café", "café"), ("é", "e"), ("é", "other")])
    assert table.get("قرارات") == "قرار" and table.get("café") == "café"
    assert table.get("é") == "e" and len(table) == 3  # the first value of a repeated key


def test_a_separator_byte_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        PackedTable.of([("a\x00b", "x")])
    with pytest.raises(ValueError, match="cannot hold"):
        PackedTable.of([("a", "x\x01")])


def test_write_and_read_round_trip() -> None:
    table = PackedTable.of((f"k{i}", f"v{i}") for i in range(100))
    out = io.BytesIO()
    table.write(out)
    again = PackedTable.read(out.getvalue())
    assert dict(again.items()) == dict(table.items())
    with pytest.raises(ValueError, match="trailing"):
        PackedTable.read(out.getvalue() + b"x")


def test_the_child_builds_the_same_table_as_this_process() -> None:
    built_here = PackedTable.of(SOURCES["simplemma"]("ar"))
    from_child, data = packed._build("simplemma", "ar")
    assert list(PackedTable.read(data)) == list(from_child)
    assert len(from_child) == len(built_here) > 10_000
    assert list(from_child) == list(built_here)
    with pytest.raises(ValueError, match="unknown word list"):
        packed_table("nltk", "en")


def test_a_built_table_is_kept_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_table("simplemma", "ar", tmp_path)
    [kept] = tmp_path.glob("simplemma-*-ar-v*.bin")

    def no_build(source: str, lang: str) -> tuple[PackedTable, bytes]:
        raise AssertionError("read from the cache, not built")

    monkeypatch.setattr(packed, "_build", no_build)
    assert list(load_table("simplemma", "ar", tmp_path)) == list(first)
    # a damaged file is rebuilt and replaced
    monkeypatch.undo()
    kept.write_bytes(kept.read_bytes()[:1000])
    assert list(load_table("simplemma", "ar", tmp_path)) == list(first)
    assert PackedTable.read(kept.read_bytes()).get("قرارات") == first.get("قرارات")


def test_an_unwritable_cache_only_costs_the_rebuild(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    table = load_table("simplemma", "ar", blocked / "word-lists")
    assert len(table) > 10_000


def test_the_cache_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "ragtrace" / "word-lists"


@cache
def _words() -> frozenset[str]:
    found: set[str] = set()
    for path in sorted(DATA.glob("*.jsonl")):
        for item in load_generic(path):
            found.update(word_list(item.answer))
            for passage in item.context:
                found.update(word_list(passage))
    return frozenset(found)


def _lang(word: str) -> str:
    return "ar" if any("\u0600" <= c <= "\u06ff" for c in word) else "en"


def test_zipf_frequencies_are_wordfreqs() -> None:
    specials = ["covid19", "2020s", "5g", "café", "naïve", "xyzzyq", "e", "قرارات", "العربية"]
    listed = list(wordfreq.iter_wordlist("en"))[::97]
    words = sorted(_words()) + specials + listed
    assert len(words) > 20_000
    differ = [
        w for w in words if zipf_frequency(w, _lang(w)) != wordfreq.zipf_frequency(w, _lang(w))
    ]
    assert differ == []


def test_lemmas_are_simplemmas() -> None:
    lemmatizer = _lemmatizer()

    def lemma(lemmatize: object, word: str) -> str:
        try:
            return str(lemmatize(word, lang=_lang(word)))  # type: ignore[operator]
        except ValueError as exc:
            return f"refused: {exc}"

    words = [w for w in sorted(_words()) if w.isalpha()]
    assert len(words) > 10_000
    differ = [w for w in words if lemma(lemmatizer.lemmatize, w) != lemma(simplemma.lemmatize, w)]
    assert differ == []
