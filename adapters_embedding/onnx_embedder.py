"""`OnnxEmbedder`: sentence embeddings from an ONNX transformer, pooled as sentence-transformers pools them.

Texts are tokenized with Hugging Face `tokenizers` (truncated to `max_tokens`, padded to the longest
text of a batch), run through the ONNX graph on onnxruntime's CPU provider, mean-pooled over the
attention mask and L2-normalised: what sentence-transformers does for all-MiniLM-L6-v2. A graph
whose first output is already one vector per text (`[batch, dimension]`) is only normalised.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

from memorybank_core import Embedder, Embedding

#: all-MiniLM-L6-v2 was trained on 128 tokens and sentence-transformers runs it on up to 256.
DEFAULT_MAX_TOKENS = 256
#: Tokens of a query embedded at most: a question's words (about 45 English words). A query may hold 512
#: characters, which as Han text or rare words is the model's whole bound: 256 tokens cost 90 ms of one core on the
#: development VM, 64 cost 20 ms (ADR 0045).
QUERY_MAX_TOKENS = 64
#: Texts per inference call: bounds the padded tensor a long import builds.
_BATCH = 32
#: Characters of a text the tokenizer reads per token kept: it tokenizes a whole text before truncating it, so a
#: save at the bounds (72,000 characters) cost 38 ms to keep 256 tokens (issue 27); 16 characters a token holds
#: any prose's first 256 tokens (English averages under 5), so only texts of long blank runs or 16-character words
#: embed differently.
_CHARACTERS_PER_TOKEN = 16


class OnnxEmbedder(Embedder):
    """The `Embedder` port on an ONNX sentence-embedding model; loaded once, used by every thread of a worker."""

    def __init__(
        self,
        *,
        model_path: Path,
        tokenizer_path: Path,
        model_id: str,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        query_max_tokens: int = QUERY_MAX_TOKENS,
    ) -> None:
        """Load the tokenizer and the model (about 1.4 s for all-MiniLM-L6-v2 int8, one thread).

        Raises:
            ValueError: the files are not a tokenizer and a sentence-embedding graph; the message names the file.
        """
        self._model_id = model_id
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as error:  # tokenizers raises its own Exception subclass, worded for its own authors
            raise ValueError(f"{tokenizer_path} is not a Hugging Face tokenizer.json") from error
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._max_characters = max_tokens * _CHARACTERS_PER_TOKEN
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a vocabulary entry, not a secret
        # Queries have their own tokenizer: a truncation set per call would race between a worker's threads.
        self._query_tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._query_tokenizer.enable_truncation(max_length=min(query_max_tokens, max_tokens))
        # One text is never padded (the file's own setting pads every text to 128 tokens: 6x the work of a question).
        self._query_tokenizer.no_padding()
        self._query_characters = min(query_max_tokens, max_tokens) * _CHARACTERS_PER_TOKEN
        options = onnxruntime.SessionOptions()
        # One thread per inference: a server runs one worker per core, each embedding for its own requests.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            self._session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        except Exception as error:  # onnxruntime's own types, with C++ detail
            raise ValueError(f"{model_path} is not an ONNX model") from error
        self._inputs = {node.name for node in self._session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise ValueError(f"{model_path} has no input_ids input: not a transformer text encoder")
        self._dimension = len(self._encode(["dimension probe"])[0])

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        embeddings: list[Embedding] = []
        for start in range(0, len(texts), _BATCH):
            for vector in self._encode(texts[start : start + _BATCH]):
                embeddings.append(Embedding.quantize(vector.tolist()))
        return embeddings

    def embed_query(self, query: str) -> Embedding:
        """The query's first `query_max_tokens` tokens, embedded."""
        encoding = self._query_tokenizer.encode(query[: self._query_characters])
        return Embedding.quantize(self._run([encoding.ids], [encoding.attention_mask])[0].tolist())

    def token_count(self, text: str) -> int:
        """The tokens `embed` reads of `text`, its two markers included: at most `max_tokens`."""
        return len(self._tokenizer.encode(text[: self._max_characters]).ids)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float vectors, one row per text."""
        encodings = self._tokenizer.encode_batch([text[: self._max_characters] for text in texts])
        return self._run([encoding.ids for encoding in encodings], [encoding.attention_mask for encoding in encodings])

    def _run(self, token_ids: Sequence[Sequence[int]], attention: Sequence[Sequence[int]]) -> np.ndarray:
        """The graph over padded token ids, mean-pooled and normalised: one unit-length row per text."""
        ids = np.array(token_ids, dtype=np.int64)
        mask = np.array(attention, dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        outputs = self._session.run(None, {name: value for name, value in feeds.items() if name in self._inputs})
        hidden = np.asarray(outputs[0], dtype=np.float32)
        if hidden.ndim == 3:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        elif hidden.ndim == 2:
            pooled = hidden
        else:
            raise ValueError("the ONNX graph's first output is neither token nor sentence embeddings")
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalized: np.ndarray = pooled / np.clip(norms, 1e-12, None)
        return normalized
