"""The bound on the terms one memory indexes (`limits.INDEXED_TERMS_MAX`, ADR 0041): content and tags always whole,
snippets in order until the bound, ordinary prose never cut, and nothing past the bound analyzed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from memorybank_core import Memory, SaveRequest, limits
from memorybank_core.entities import Source
from memorybank_core.ids import CONTEXT_PREFIX, MEMORY_PREFIX, ORGANIZATION_PREFIX, USER_PREFIX, new_id
from memorybank_search import OwnerIndexer, TextAnalyzer, search_fields

DOCS = Path(__file__).resolve().parents[2] / "docs"


def han(size: int, *, start: int = 0) -> str:
    """Han text whose bigrams do not repeat soon: two terms a character, the densest text the analyzer sees."""
    return "".join(chr(0x4E00 + (start + 7919 * index) % 3000) for index in range(size))


def memory(content: str, *, tags: tuple[str, ...] = (), snippets: tuple[str, ...] = ()) -> Memory:
    request = SaveRequest.parse(
        {"content": content, "tags": list(tags), "contexts": [{"snippet": snippet} for snippet in snippets]}
    )
    return request.to_memory(
        memory_id=new_id(MEMORY_PREFIX),
        user_id=new_id(USER_PREFIX),
        org_id=new_id(ORGANIZATION_PREFIX),
        source=Source.CHAT,
        created_at=datetime.now(UTC),
        context_ids=[new_id(CONTEXT_PREFIX) for _ in request.contexts],
    )


def every_term(analyzer: TextAnalyzer, saved: Memory) -> list[str]:
    """What the memory would be indexed by without a bound."""
    return [term for field in search_fields(saved) for term in analyzer.document_terms(field)]


def prose(size: int, *, skip: int = 0) -> str:
    """English prose of `size` characters (this repository's docs, in order: technical prose with code in it)."""
    text = " ".join(" ".join(path.read_text().split()) for path in sorted(DOCS.glob("*.md")))
    return text[skip : skip + size].strip()


def test_a_memory_of_cjk_text_at_every_bound_indexes_the_bound_and_its_first_terms() -> None:
    indexer = OwnerIndexer()
    saved = memory(
        han(limits.CONTENT.max),
        tags=tuple(han(limits.TAG.max, start=n) for n in range(limits.TAGS_MAX)),
        snippets=tuple(han(limits.SNIPPET.max, start=n) for n in range(limits.CONTEXTS_MAX)),
    )
    document = indexer.document(saved)
    terms = every_term(indexer.analyzer, saved)

    assert len(terms) > 5 * limits.INDEXED_TERMS_MAX
    assert document.doc_length == limits.INDEXED_TERMS_MAX
    assert len(document.search_terms.split(" ")) == limits.INDEXED_TERMS_MAX
    # The tokens kept are those of the first terms, in order.
    unbounded = OwnerIndexer().document(attrs.evolve(saved, contexts=()))
    assert document.search_terms.startswith(unbounded.search_terms + " ")


def test_content_and_tags_at_their_bounds_are_always_indexed_whole() -> None:
    # At most two terms a character (CJK), so the bound holds the densest content and tags there are.
    assert 2 * (limits.CONTENT.max + limits.TAGS_MAX * limits.TAG.max) <= limits.INDEXED_TERMS_MAX
    indexer = OwnerIndexer()
    saved = memory(han(limits.CONTENT.max), tags=tuple(han(limits.TAG.max, start=n) for n in range(limits.TAGS_MAX)))

    assert indexer.document(saved).doc_length == len(every_term(indexer.analyzer, saved))


def test_english_prose_filling_every_field_is_indexed_whole() -> None:
    indexer = OwnerIndexer()
    saved = memory(
        prose(limits.CONTENT.max),
        tags=tuple(prose(limits.TAG.max, skip=100 * n) for n in range(limits.TAGS_MAX)),
        snippets=tuple(prose(limits.SNIPPET.max, skip=limits.SNIPPET.max * n) for n in range(limits.CONTEXTS_MAX)),
    )
    terms = every_term(indexer.analyzer, saved)

    assert indexer.document(saved).doc_length == len(terms)
    assert len(terms) <= limits.INDEXED_TERMS_MAX * 3 // 4  # room to spare, not a near miss


def test_fields_wholly_past_the_bound_are_not_analyzed(monkeypatch: pytest.MonkeyPatch) -> None:
    # The bound bounds the work too: a save's snippets past it cost no analysis.
    indexer = OwnerIndexer()
    analyzed: list[str] = []
    analyze = indexer.analyzer.document_terms

    def counted(text: str) -> list[str]:
        analyzed.append(text)
        return analyze(text)

    monkeypatch.setattr(indexer.analyzer, "document_terms", counted)
    snippets = tuple(han(limits.SNIPPET.max, start=n) for n in range(limits.CONTEXTS_MAX))
    indexer.document(memory(han(limits.CONTENT.max), snippets=snippets))

    # Content (16,000 terms) and the first snippet (8,000) reach the bound: nothing after them is read.
    assert analyzed == [han(limits.CONTENT.max), snippets[0]]
