"""Ranking: what an agent types finds the capability it means."""

from __future__ import annotations

import pytest

from adapters_mcp import default_catalog, rank
from adapters_mcp.ranking import term, terms


def best(query: str) -> str:
    ranked = rank(default_catalog(), query, limit=5)
    assert ranked, f"nothing matched {query!r}"
    return ranked[0].capability.name


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # The four the issue requires.
        ("save a memory", "postMemory"),
        ("search my memories", "getMemorySearch"),
        ("list my memories", "getMemory"),
        ("delete a memory", "deleteMemoryById"),
        # Paraphrases agents actually send.
        ("remember this", "postMemory"),
        ("store a fact about the user", "postMemory"),
        ("persist a note", "postMemory"),
        ("record this for later", "postMemory"),
        ("create memory", "postMemory"),
        ("forget that memory", "deleteMemoryById"),
        ("remove a note", "deleteMemoryById"),
        ("erase memories", "deleteMemoryById"),
        ("find what I said about the Acme deal", "getMemorySearch"),
        ("recall", "getMemorySearch"),
        ("look up my notes about deployment", "getMemorySearch"),
        ("query memories", "getMemorySearch"),
        ("show all my notes", "getMemory"),
        ("browse notes", "getMemory"),
        ("enumerate facts", "getMemory"),
        ("Save a Memory!", "postMemory"),
        ("SEARCH MEMORIES", "getMemorySearch"),
        ("saving notes", "postMemory"),
        ("removed memories", "deleteMemoryById"),
    ],
)
def test_a_plain_words_query_ranks_the_meant_capability_first(query: str, expected: str) -> None:
    assert best(query) == expected


@pytest.mark.parametrize("query", ["weather in paris", "the", "what is this", "?!", "   "])
def test_a_query_about_nothing_in_the_catalog_matches_nothing(query: str) -> None:
    assert rank(default_catalog(), query, limit=5) == []


def test_the_winner_is_ahead_by_a_clear_margin_not_a_tie_break() -> None:
    for query in ("save a memory", "search my memories", "list my memories", "delete a memory"):
        first, second = rank(default_catalog(), query, limit=2)
        assert first.score > second.score, query


def test_limit_caps_the_matches_and_scores_descend() -> None:
    ranked = rank(default_catalog(), "memory", limit=2)

    assert len(ranked) == 2
    assert ranked[0].score >= ranked[1].score > 0


def test_a_name_prefix_matches() -> None:
    assert best("sear") == "getMemorySearch"
    catalog = default_catalog()
    assert {r.capability.name for r in rank(catalog, "mem", limit=len(catalog))} == set(catalog.names)


def test_synonyms_plurals_and_stems_fold_to_one_term() -> None:
    assert {term(w) for w in ("memory", "memories", "notes", "fact", "facts")} == {"memory"}
    assert {term(w) for w in ("save", "saving", "saved", "remember", "post", "store", "stores")} == {"save"}
    assert {term(w) for w in ("forget", "removed", "erasing", "delete")} == {"delete"}
    assert term("the") is None


def test_camel_case_names_split_into_words() -> None:
    assert terms("getMemorySearch") == ["get", "memory", "search"]
    assert terms("deleteMemoryById") == ["delete", "memory", "id"]
