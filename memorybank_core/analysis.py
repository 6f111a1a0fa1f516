"""Text analysis for lexical search: turning text into the terms an index holds.

`Analyzer` is a port so a richer analyzer (stemming, CJK) can replace the
simple default without touching the engines that use it.
"""

from __future__ import annotations

import re
import unicodedata
from abc import abstractmethod
from typing import Protocol

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
