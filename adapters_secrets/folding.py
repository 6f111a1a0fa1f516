"""The text the screen reads: invisible code points dropped, compatibility forms folded, look-alikes mapped (ADR 0031).

A credential can be written so that it no longer matches its pattern while a person (or a program that
normalizes its input) still reads it: a zero-width space inside an AWS key id, `postgres\\u200b://`, a full-width
`@` or `:` (U+FF20, U+FF1A), mathematical bold letters (U+1D400...), a Cyrillic `A` (U+0410) in `AKIA`. The
screen therefore reads a folded copy:

- every *default-ignorable* code point (Unicode's `Default_Ignorable_Code_Point`: soft hyphen, zero-width space
  and joiners, bidirectional controls, variation selectors, tags, ...) is dropped;
- every other code point becomes its own NFKC form (full-width and mathematical letters, ligatures, circled digits
  become ASCII), one code point at a time so that each folded character still points at one original character;
- a second copy maps look-alike letters of other scripts to the ASCII letter they imitate (Unicode's confusables,
  as the `confusable-homoglyphs` package ships them: Cyrillic U+0410 for `A`, Greek U+039A for `K`); the screen
  reads it for the fixed-shape credentials only, and keeps what it finds there only where ASCII and mapped
  characters mix (a Russian sentence is not a token).

Ranges found in the folded text are mapped back to the characters of the original text. ASCII text (nearly every
memory) is its own folded copy and costs nothing here.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
import unicodedata
from collections.abc import Iterator

#: Unicode 15.1 DerivedCoreProperties.txt, `Default_Ignorable_Code_Point`: rendered as nothing unless a font
#: chooses to, so a person reading the text never sees them.
_DEFAULT_IGNORABLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_IGNORABLE = re.compile(f"[{_DEFAULT_IGNORABLE}]")


class _FoldTable(dict[int, str]):
    """`str.translate`'s table: each code point's folded form, computed on first sight and kept."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._resizing: set[str] = set()
        self.resizing = re.compile(r"(?!)")
        """Matches every code point seen so far whose folded form is not one character (dropped or expanded)."""

    def __missing__(self, code_point: int) -> str:
        character = chr(code_point)
        folded = "" if _IGNORABLE.match(character) else _IGNORABLE.sub("", unicodedata.normalize("NFKC", character))
        with self._lock:
            self[code_point] = folded
            if len(folded) != 1 and character not in self._resizing:
                self._resizing.add(character)
                self.resizing = re.compile("[" + "".join(re.escape(c) for c in sorted(self._resizing)) + "]")
        return folded


_FOLD = _FoldTable()


class Folded:
    """A text as the screen reads it, and the way back to the original's characters (worked out when asked)."""

    def __init__(self, text: str, original: str | None = None) -> None:
        self.text = text
        """The folded copy (the original itself when nothing folds)."""
        self._original_text = original
        self._map: tuple[list[int], list[tuple[int, int]]] | None = None

    def is_identity(self) -> bool:
        """Whether every folded character sits where its original one does."""
        return self._original_text is None

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The original characters [start, end) of folded characters [start, end) came from."""
        return self._original(start), self._original(end - 1) + 1 if end > start else self._original(start)

    def _original(self, position: int) -> int:
        if self._original_text is None:
            return position
        breaks, origins = self._mapping(self._original_text)
        index = bisect.bisect_right(breaks, position) - 1
        if index < 0:
            return position
        origin, piece_end = origins[index]
        if position < piece_end:  # inside the folded form of one original character
            return origin
        return origin + 1 + (position - piece_end)

    def _mapping(self, original: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Where the distance between folded and original positions changes: only a text with findings needs it."""
        if self._map is None:
            positions = [match.start() for match in _FOLD.resizing.finditer(original)]
            lengths = [len(_FOLD[ord(original[position])]) for position in positions]
            shifts = itertools.accumulate((length - 1 for length in lengths), initial=0)
            breaks = [position + shift for position, shift in zip(positions, shifts, strict=False)]
            origins = [(p, b + n) for p, b, n in zip(positions, breaks, lengths, strict=True)]
            self._map = (breaks, origins)
        return self._map


def fold(text: str) -> Folded:
    """`text` with default-ignorable code points dropped and each code point in its NFKC form."""
    if text.isascii() or (unicodedata.is_normalized("NFKC", text) and _IGNORABLE.search(text) is None):
        return Folded(text)
    folded = text.translate(_FOLD)
    if len(folded) == len(text) and _FOLD.resizing.search(text) is None:
        return Folded(folded)
    return Folded(folded, text)


class _LookAlikes:
    """Non-ASCII letters that imitate an ASCII letter or digit, from Unicode's confusables (loaded on first use)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: dict[int, str] | None = None
        self._class: re.Pattern[str] | None = None

    def table(self) -> tuple[dict[int, str], re.Pattern[str]]:
        with self._lock:
            if self._table is None or self._class is None:
                self._table = _look_alike_table()
                self._class = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(self._table)) + "]")
            return self._table, self._class


def _look_alike_table() -> dict[int, str]:
    from confusable_homoglyphs import confusables

    table: dict[int, str] = {}
    for character, homoglyphs in confusables.confusables_data.items():
        # Outside the BMP they are mathematical letters, which NFKC has folded already.
        if len(character) != 1 or character.isascii() or not character.isalpha() or ord(character) > 0xFFFF:
            continue
        targets = [h["c"] for h in homoglyphs if len(h["c"]) == 1 and h["c"].isascii() and h["c"].isalnum()]
        if not targets:
            continue
        target = targets[0]
        # Unicode's prototype for I-like letters is `l`; an upper-case one (Cyrillic U+0406, Greek U+0399) imitates `I`.
        if target == "l" and character.isupper():
            target = "I"
        table[ord(character)] = target
    return table


_LOOK_ALIKES = _LookAlikes()


def look_alike_copy(folded: str) -> tuple[str, re.Pattern[str]] | None:
    """`folded` with look-alike letters replaced by the ASCII letters they imitate, and the class of those letters;
    None when it holds none (always for ASCII). Same length: positions carry over."""
    if folded.isascii():
        return None
    table, letters = _LOOK_ALIKES.table()
    if letters.search(folded) is None:
        return None
    return folded.translate(table), letters


def mixes_scripts(folded: str, letters: re.Pattern[str], start: int, end: int) -> bool:
    """Whether folded characters [start, end) hold both an ASCII letter or digit and a look-alike letter."""
    span = folded[start:end]
    return letters.search(span) is not None and any(c.isascii() and c.isalnum() for c in span)


def ignorable_code_points() -> Iterator[str]:
    """Each default-ignorable code point of the BMP the screen drops (for tests and docs)."""
    for code_point in range(0x10000):
        if _IGNORABLE.match(chr(code_point)):
            yield chr(code_point)
