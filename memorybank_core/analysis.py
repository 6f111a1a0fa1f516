"""Text analysis for lexical search: turning text into the terms an index holds.

`Analyzer` is a port so a richer analyzer (stemming, CJK) can replace the
simple default without touching the engines that use it.
"""

from __future__ import annotations

import re
import unicodedata
from abc import abstractmethod
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memorybank_core.entities import Memory

_WORD = re.compile(r"\w+")


class Analyzer(Protocol):
    """Turns text into index terms (for documents) and query terms (for searches)."""

    @abstractmethod
    def document_terms(self, text: str) -> list[str]:
        """Terms to index for `text`, in order, repeats kept (they count toward term frequency)."""

    @abstractmethod
    def query_terms(self, text: str) -> list[str]:
        """Terms to look up for a query, deduplicated, in order."""


class SimpleAnalyzer(Analyzer):
    """NFKC, case folding and splitting on non-word characters. No stemming, no stopwords."""

    def document_terms(self, text: str) -> list[str]:
        return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())

    def query_terms(self, text: str) -> list[str]:
        return list(dict.fromkeys(self.document_terms(text)))


def search_fields(memory: Memory) -> list[str]:
    """The texts a memory is found by, in order: its content, its tags, then its context snippets.

    Tags and snippets are what a person remembers a memory by as often as its wording, and
    every engine indexes exactly these fields, so they all rank the same document.
    """
    return [memory.content, *memory.tags, *(context.snippet for context in memory.contexts)]


def memory_terms(analyzer: Analyzer, memory: Memory) -> list[str]:
    """The analyzer's document terms of every search field of `memory`, field after field."""
    return [term for field in search_fields(memory) for term in analyzer.document_terms(field)]
