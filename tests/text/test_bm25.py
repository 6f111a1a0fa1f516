"""BM25 over candidates' sparse counts (`best_matches`): what a ranking reports whatever shape its inputs come in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memorybank_search.bm25 import CorpusStats, best_matches

TERMS = ["old", "bike", "nephew", "sofa", "lamp"]


def test_a_weight_below_zero_never_makes_a_hit() -> None:
    # Statistics read a moment apart can count a term in more documents than the owner holds: its idf is then
    # negative, and a document holding only it scores below zero. Scores stay positive: it is no match.
    stats = CorpusStats(document_count=1, average_length=2.0, document_frequency={"old": 3})
    assert best_matches(["old"], {"a": {"old": 1}}, stats, limit=5) == []


@settings(max_examples=200)
@given(
    st.dictionaries(
        st.sampled_from(["m1", "m2", "m3", "m4"]),
        st.dictionaries(st.sampled_from([*TERMS, "other"]), st.integers(min_value=0, max_value=3)),
    ),
    st.lists(st.sampled_from(TERMS), min_size=1, max_size=5),
)
def test_zero_counts_and_terms_not_asked_change_nothing(documents: dict[str, dict[str, int]], query: list[str]) -> None:
    # Engines hand over only the tokens a candidate holds; a count of 0, or a term not asked for, is the same as none.
    frequency = {term: sum(1 for counts in documents.values() if counts.get(term)) for term in TERMS}
    stats = CorpusStats(document_count=10, average_length=3.0, document_frequency=frequency)
    lengths = dict.fromkeys(documents, 5)
    sparse = {
        memory_id: {term: count for term, count in counts.items() if count and term in query}
        for memory_id, counts in documents.items()
    }
    full = best_matches(query, documents, stats, 10, lengths=lengths)
    assert best_matches(query, sparse, stats, 10, lengths=lengths) == full
    assert all(hit.score > 0 and hit.coverage is not None and 0 < hit.coverage <= 1 for hit in full)
