"""BM25 over candidates' sparse counts (`best_matches`): what a ranking reports whatever shape its inputs come in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memorybank_search.bm25 import CorpusStats, best_matches
from memorybank_search.candidates import Candidate, rank_candidates

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


def test_frequencies_counted_over_the_candidates_read_are_scaled_to_all_that_matched() -> None:
    # Past a bound a long query's frequencies are estimated (ADR 0044): two of six matching memories were read, so
    # each term's count over the two is scaled by six over two ("old" in both: 6; "sofa" in one: 3).
    candidates = [Candidate("m1", "tag_old tag_sofa", 2), Candidate("m2", "tag_old tag_lamp", 2)]
    query = ["tag_old", "tag_sofa"]

    def ranked(frequency: dict[str, int] | None, unread: int = 0) -> list[tuple[str, float]]:
        hits = rank_candidates(
            query, candidates, document_count=20, total_length=40, document_frequency=frequency, limit=5, unread=unread
        )
        return [(hit.memory_id, hit.score) for hit in hits]

    estimated, read_only = ranked(None, unread=4), ranked(None)

    assert estimated == ranked({"tag_old": 6, "tag_sofa": 3})
    # Each term is more common in the estimate than in the two read alone, so every score is lower.
    assert all(e[1] < r[1] for e, r in zip(estimated, read_only, strict=True))
