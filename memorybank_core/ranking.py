"""BM25 relevance with one owner's own statistics, shared by every engine that ranks in the app.

Scoring per owner means another user's data can never change a user's ranking.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import attrs

from memorybank_core.ports import SearchHit

#: The usual defaults (Robertson & Zaragoza).
K1 = 1.2
B = 0.75


@attrs.frozen(kw_only=True)
class CorpusStats:
    """An owner's collection statistics: how many documents, their average length, and term document counts."""

    document_count: int
    average_length: float
    document_frequency: Mapping[str, int]


def idf(document_count: int, containing: int) -> float:
    """BM25 idf; the +1 inside the log keeps it positive even for a term in every document."""
    return math.log(1 + (document_count - containing + 0.5) / (containing + 0.5))


def bm25(query_terms: Sequence[str], counts: Counter[str], length: int, stats: CorpusStats) -> float:
    """The BM25 score of one document (its term counts and length) for `query_terms`."""
    norm = K1 * (1 - B + B * length / max(stats.average_length, 1e-9))
    return sum(
        idf(stats.document_count, stats.document_frequency.get(term, 0))
        * counts[term]
        * (K1 + 1)
        / (counts[term] + norm)
        for term in query_terms
        if counts[term] > 0
    )


def rank(
    query_terms: Sequence[str], documents: Mapping[str, Counter[str]], stats: CorpusStats, limit: int
) -> list[SearchHit]:
    """The best `limit` documents by BM25, score descending then id descending; zero scores dropped."""
    hits = []
    for memory_id, counts in documents.items():
        score = bm25(query_terms, counts, sum(counts.values()), stats)
        if score > 0:
            hits.append(SearchHit(memory_id=memory_id, score=score))
    hits.sort(key=lambda hit: (hit.score, hit.memory_id), reverse=True)
    return hits[:limit]


def corpus_stats(documents: Mapping[str, Counter[str]], terms: Sequence[str]) -> CorpusStats:
    """Statistics over a whole (in-memory) collection, for the given terms."""
    count = len(documents)
    total = sum(sum(counts.values()) for counts in documents.values())
    return CorpusStats(
        document_count=count,
        average_length=total / count if count else 0.0,
        document_frequency={t: sum(1 for counts in documents.values() if counts[t] > 0) for t in terms},
    )
