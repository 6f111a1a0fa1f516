"""BM25 relevance with one owner's own statistics: the one scoring formula of every engine.

Scoring per owner means another user's data can never change a user's ranking.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence

import attrs

from memorybank_core import SearchHit

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


def best_matches(
    query_terms: Sequence[str],
    documents: Mapping[str, Mapping[str, int]],
    stats: CorpusStats,
    limit: int,
    *,
    lengths: Mapping[str, int] | None = None,
    groups: Sequence[Sequence[str]] | None = None,
) -> list[SearchHit]:
    """The best `limit` documents by BM25, score descending then id descending; zero scores dropped.

    Each hit's `coverage` is the share of the query's idf its document holds (a term of the query
    the owner never wrote weighs the most): how much of what was asked its words answer; its `terms`
    how many of the query's terms it holds. `groups`
    gathers the tokens that spell one term (a term searched under two index schemes while a rewrite
    is pending): the term weighs once, by the documents holding any of them.

    A document's length is the sum of its counts, unless `lengths` gives it: an engine that
    stores each document's length need only count the query's terms.
    """
    # Everything that does not depend on the document is computed once: this loop runs for
    # every candidate (up to a thousand), so it is kept to dict lookups and arithmetic.
    weights = {
        term: idf(stats.document_count, stats.document_frequency.get(term, 0)) * (K1 + 1)
        for term in dict.fromkeys(query_terms)
    }
    constant = K1 * (1 - B)
    per_length = K1 * B / max(stats.average_length, 1e-9)
    spelled = [tuple(group) for group in groups] if groups is not None else [(term,) for term in weights]
    term_weights = [
        idf(stats.document_count, sum(stats.document_frequency.get(token, 0) for token in group)) for group in spelled
    ]
    total_weight = math.fsum(term_weights) or 1.0
    # Per document, the work is per query term it holds, not per term asked: a save's `similar` look-up asks with the
    # new memory's every word, and each candidate holds a few of them. Held terms are summed in query order, so a
    # score is the same float whatever order a document's counts come in.
    order = {term: index for index, term in enumerate(weights)}
    # Which terms' weights count toward coverage when a document holds a token: the terms it spells.
    spelling: dict[str, list[float]] = {}
    for group, weight in zip(spelled, term_weights, strict=True):
        for token in dict.fromkeys(group):
            spelling.setdefault(token, []).append(weight)
    single = all(len(group) == 1 for group in spelled)
    scored: list[tuple[float, str, float, int]] = []
    for memory_id, counts in documents.items():
        held_terms = sorted([term for term, count in counts.items() if count and term in order], key=order.__getitem__)
        if not held_terms:
            continue
        length = lengths[memory_id] if lengths is not None else sum(counts.values())
        norm = constant + per_length * length
        score = 0.0
        for term in held_terms:
            frequency = counts[term]
            score += weights[term] * frequency / (frequency + norm)
        if score <= 0:  # a statistic read a moment apart can make a weight negative: scores stay positive
            continue
        if single:
            held = [weight for term in held_terms for weight in spelling.get(term, ())]
        else:
            held = [
                weight
                for group, weight in zip(spelled, term_weights, strict=True)
                if any(counts.get(token) for token in group)
            ]
        scored.append((score, memory_id, math.fsum(held) / total_weight, len(held)))
    return [
        SearchHit(memory_id=memory_id, score=score, coverage=coverage, terms=terms)
        for score, memory_id, coverage, terms in heapq.nlargest(limit, scored)
    ]
