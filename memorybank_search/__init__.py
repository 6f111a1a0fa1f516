"""memorybank_search: everything search is, in one pure package (stdlib, attrs, snowballstemmer, the core).

- `analyzer`: the one tokenizer (folding, compounds, Snowball stemming, symbols, CJK) and
  `stopwords`, the one stopword list; the MCP capability ranking uses them too.
- `indexer`: `OwnerIndexer`, a memory's owner-tagged search document and a query's tokens.
- `bm25`: the one scoring formula, with one owner's statistics.
- `candidates`: ranking the documents a full-text index matched (every engine ends here).
- `inmemory`: `InMemorySearch`, the reference engine, which ranks exactly as the SQL engines do, and
  `InMemoryVectors`, its memories' vectors for hybrid search.
- `fusion`: the hybrid ranking (BM25 / max + min-max cosine, per owner); `hybrid`: `HybridSearch`, the
  engine that fuses, which needs numpy (the `semantic` extra) and so is imported from its module.

The SQL engines (MySQL FULLTEXT, SQLite FTS5) live in `adapters_mysql` and only fetch candidates.
"""

from memorybank_search.analyzer import ANALYZER_VERSION, TextAnalyzer, Token, normalize, stem, tokens
from memorybank_search.candidates import DEFAULT_CANDIDATE_LIMIT, Candidate, rank_candidates, term_counts
from memorybank_search.fusion import Fusion
from memorybank_search.indexer import SEARCH_VERSION, OwnerIndexer, SearchDocument, embedding_text, search_fields
from memorybank_search.inmemory import InMemorySearch, InMemoryVectors
from memorybank_search.stopwords import STOPWORDS

__all__ = [
    "ANALYZER_VERSION",
    "DEFAULT_CANDIDATE_LIMIT",
    "SEARCH_VERSION",
    "STOPWORDS",
    "Candidate",
    "Fusion",
    "InMemorySearch",
    "InMemoryVectors",
    "OwnerIndexer",
    "SearchDocument",
    "TextAnalyzer",
    "Token",
    "embedding_text",
    "normalize",
    "rank_candidates",
    "search_fields",
    "stem",
    "term_counts",
    "tokens",
]
