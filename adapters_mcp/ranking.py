"""Ranking capabilities against what an agent asked for ("save a memory", "forget that note").

Lexical, like the reference host's newer ranking: words are case-folded and stemmed by
the memory search's own analyzer (`memorybank_search`: Snowball), stopwords dropped (its
one list), and synonyms folded into one group (remember = save = post). Each query term then scores by where it appears:
name 5, a name word it prefixes 3, the summary's lead sentence 2, tags 2, path 1.
The rest of the summary (how to call the operation) counts 0.5, so "an empty list"
in a search route's calling notes cannot outrank the route that lists.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import attrs

from adapters_mcp.catalog import Capability
from memorybank_search import STOPWORDS, TextAnalyzer, tokens

NAME_WEIGHT = 5.0
NAME_PREFIX_WEIGHT = 3.0
LEAD_WEIGHT = 2.0
TAG_WEIGHT = 2.0
PATH_WEIGHT = 1.0
DETAIL_WEIGHT = 0.5
#: A query word must be this long before it may match a longer name word by prefix ("mem" -> memory).
MIN_PREFIX_LENGTH = 3

SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("memory", "memories", "note", "fact"),
    # HTTP verbs sit with the words an agent uses for them: an operationId starts with its method.
    ("save", "store", "persist", "record", "write", "remember", "add", "create", "post", "keep"),
    ("search", "find", "query", "lookup", "look", "recall"),
    ("delete", "remove", "erase", "forget", "drop"),
    ("get", "fetch", "read", "show", "view"),
    ("list", "enumerate", "browse", "all"),
    ("update", "edit", "change", "modify", "put", "patch", "correct", "fix", "replace", "restore"),
    ("revision", "history", "version", "previous", "earlier", "past"),
)
"""Words that mean the same thing to this catalog; every word of a group ranks as the group's first word.

A word of a group is never a stopword here (`all`, `recall`, `remember` name operations)."""

_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SENTENCE_END = re.compile(r"[.;:!?](?:\s|$)")

_ANALYZER = TextAnalyzer()


def _stem(word: str) -> str:
    # The analyzer's term for one plain word (a run of letters and digits is exactly one term).
    found = _ANALYZER.document_terms(word)
    return found[0] if found else word


_GROUP_OF: dict[str, str] = {_stem(word): group[0] for group in SYNONYM_GROUPS for word in group}


def words(text: str) -> list[str]:
    """The analyzer's words of `text`, unstemmed, camelCase split first (`getMemorySearch` -> get, memory, search)."""
    normalized = unicodedata.normalize("NFKC", text)
    split = " ".join(_CAMEL.findall(normalized)) if normalized.isascii() else normalized
    return [token.surface for token in tokens(split)]


def term(word: str) -> str | None:
    """The index term of one word: its synonym group, else its stem; None for a stopword."""
    stemmed = _stem(word)
    if stemmed in _GROUP_OF:
        return _GROUP_OF[stemmed]
    return None if word in STOPWORDS else stemmed


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order, stopwords dropped."""
    return [t for t in (term(w) for w in words(text)) if t is not None]


@attrs.frozen
class _Fields:
    """One capability's terms, by field."""

    name: frozenset[str]
    name_words: tuple[str, ...]
    lead: frozenset[str]
    details: frozenset[str]
    tags: frozenset[str]
    path: frozenset[str]

    @classmethod
    def of(cls, capability: Capability) -> _Fields:
        lead, details = _split_summary(capability.summary)
        path_text = " ".join(s for s in capability.path.split("/") if s and s != "v1" and not s.startswith("{"))
        return cls(
            name=frozenset(terms(capability.name)),
            name_words=tuple(words(capability.name)),
            lead=frozenset(terms(lead)),
            details=frozenset(terms(details)),
            tags=frozenset(t for tag in capability.tags for t in terms(tag)),
            path=frozenset(terms(path_text)),
        )


def _split_summary(summary: str) -> tuple[str, str]:
    end = _SENTENCE_END.search(summary)
    if end is None:
        return summary, ""
    return summary[: end.start()], summary[end.end() :]


@attrs.frozen
class RankedCapability:
    """A capability and how well it matched."""

    capability: Capability
    score: float


def rank(capabilities: Iterable[Capability], query: str, *, limit: int) -> list[RankedCapability]:
    """The best `limit` capabilities for `query`, best first; capabilities matching nothing are left out.

    Ties go to the capability whose name the query explains best (the larger share of its
    name's terms matched: "list my memories" prefers getMemory to getMemorySearch), then by name.
    """
    query_terms = list(dict.fromkeys(terms(query)))
    raw_words = [w for w in dict.fromkeys(words(query)) if term(w) is not None]
    ranked: list[tuple[float, float, str, Capability]] = []
    for capability in capabilities:
        fields = _Fields.of(capability)
        score = sum(_term_score(t, fields) for t in query_terms)
        score += sum(_prefix_score(w, fields) for w in raw_words)
        if score > 0:
            coverage = len(fields.name & set(query_terms)) / max(len(fields.name), 1)
            ranked.append((score, coverage, capability.name, capability))
    ranked.sort(key=lambda entry: (-entry[0], -entry[1], entry[2]))
    return [RankedCapability(capability=c, score=round(s, 2)) for s, _, _, c in ranked[:limit]]


def _term_score(query_term: str, fields: _Fields) -> float:
    score = 0.0
    if query_term in fields.name:
        score += NAME_WEIGHT
    if query_term in fields.lead:
        score += LEAD_WEIGHT
    elif query_term in fields.details:
        score += DETAIL_WEIGHT
    if query_term in fields.tags:
        score += TAG_WEIGHT
    if query_term in fields.path:
        score += PATH_WEIGHT
    return score


def _prefix_score(query_word: str, fields: _Fields) -> float:
    # A partial word ("mem", "sear") that begins a longer name word, and that no term match already counted.
    if len(query_word) < MIN_PREFIX_LENGTH or term(query_word) in fields.name:
        return 0.0
    if any(w != query_word and w.startswith(query_word) for w in fields.name_words):
        return NAME_PREFIX_WEIGHT
    return 0.0
