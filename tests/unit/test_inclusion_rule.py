"""Hybrid search's inclusion rule for word matches (memorybank_search.fusion): a memory sharing one incidental
word with a longer question is not returned for it; one holding two of its terms, the one term of a one-word
question, or a rare term carrying most of the question is. The BM25 stage counts the terms each memory holds."""

from __future__ import annotations

from memorybank_core import SearchHit
from memorybank_search.bm25 import CorpusStats, best_matches
from memorybank_search.fusion import Fusion

#: A bank of 60 memories whose cosines with the question are unremarkable (none stands out by meaning).
UNREMARKABLE = {f"m{n:02d}": 0.05 + 0.002 * (n % 20) for n in range(60)}


def returned(hit: SearchHit) -> list[str]:
    similarities = {**UNREMARKABLE, hit.memory_id: 0.12}
    return [found.memory_id for found in Fusion().rank([hit], similarities, limit=10)]


def test_one_incidental_word_of_a_longer_question_returns_nothing() -> None:
    # "how old is my nephew?" and "I sold my old bike": the memory holds "old" and nothing else asked.
    assert returned(SearchHit(memory_id="m07", score=2.0, coverage=0.44, terms=1)) == []


def test_two_of_the_questions_terms_are_returned_as_words() -> None:
    hits = Fusion().rank(
        [SearchHit(memory_id="m07", score=2.0, coverage=0.44, terms=2)], {**UNREMARKABLE, "m07": 0.12}, limit=10
    )
    assert [(hit.memory_id, hit.match) for hit in hits] == [("m07", "words")]


def test_the_one_word_of_a_one_word_question_and_a_rare_name_are_returned() -> None:
    assert returned(SearchHit(memory_id="m07", score=2.0, coverage=1.0, terms=1)) == ["m07"]
    assert returned(SearchHit(memory_id="m07", score=2.0, coverage=0.65, terms=1)) == ["m07"]


def test_an_engine_that_does_not_count_terms_is_judged_by_coverage_as_before() -> None:
    assert returned(SearchHit(memory_id="m07", score=2.0, coverage=0.44)) == ["m07"]


def test_bm25_counts_the_query_terms_each_memory_holds_a_term_spelled_twice_once() -> None:
    documents = {"a": {"old": 1, "bike": 1}, "b": {"old": 1, "nephew": 2}, "c": {"sofa": 1}}
    stats = CorpusStats(document_count=3, average_length=2.0, document_frequency={"old": 2, "bike": 1, "nephew": 1})
    hits = best_matches(["old", "nephew"], documents, stats, limit=10)
    assert {hit.memory_id: hit.terms for hit in hits} == {"a": 1, "b": 2}
    # One term searched under two index schemes (a rewrite pending) still counts as one.
    grouped = best_matches(["old", "x1old"], {"a": {"old": 1, "x1old": 1}}, stats, limit=10, groups=[("old", "x1old")])
    assert [hit.terms for hit in grouped] == [1]
