"""How counts are worded in what people read: `1 memory`, `2 memories`, `0 lines`; one rule everywhere."""

from __future__ import annotations

_IRREGULAR = {"memory": "memories", "this": "these", "is": "are", "was": "were", "has": "have", "does": "do"}


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 line`, `2 lines`, `0 lines`; `1 memory`, `2 memories`."""
    return f"{count} {pluralized(count, noun, plural)}"


def pluralized(count: int, word: str, plural: str | None = None) -> str:
    """`word` agreeing with `count`: `memory`/`memories`, `line`/`lines`, and verbs `is`/`are`, `holds`/`hold`."""
    if count == 1:
        return word
    if plural is not None:
        return plural
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    return word.removesuffix("s") if word.endswith("s") and word[:-1] in _VERBS else word + "s"


#: Verbs in the third person singular, which lose their `s` in the plural (`holds` -> `hold`).
_VERBS = frozenset({"hold", "need", "lack", "remain", "stay", "open"})
