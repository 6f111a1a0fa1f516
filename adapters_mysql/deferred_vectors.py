"""`DeferredVectors`: the vectors of long saves, written just after the save answered (ADR 0045).

Embedding costs about 0.3 ms of one core per token: a memory of 256 tokens (the model's bound) takes 80-90 ms, more
than a whole request may cost (issue 27: no request within the bounds over 50 ms of CPU). A save whose text is
longer than `INLINE_EMBEDDING_TOKENS` therefore commits without its vector and hands the memory to this queue; a
daemon thread of the worker embeds it and writes its vector moments later (`embedding_reindex.embed_memories`),
only while the memory is still that version. Until then search finds it by its words, as it finds a memory the
background fill has not reached (memorybank.vector_fill), and its save's `similar` look-up compares by words.

The queue holds at most `DEFAULT_QUEUE_BOUND` memories: past it, a save embeds its own vector again (slower, never
lost). A vector the queue could not write (the database was away, the process stopped first) is written by the next
start's background fill or `memorybank reindex --embeddings`; nothing is logged of a memory but its id and counts.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

import sqlalchemy as sa

from adapters_mysql.embedding_reindex import embed_memories
from adapters_mysql.sealed_rows import RowCodec
from memorybank_core import Embedder, Memory

_log = logging.getLogger("memorybank.vectors")

#: A save embeds its own vector when the model reads at most this many tokens of its text (20 ms of one core for
#: all-MiniLM-L6-v2 on the development VM: a sentence and a short snippet); a longer text's is written after the save
#: answered, as its request's other work at the bounds already costs 20-40 ms (ADR 0045).
INLINE_EMBEDDING_TOKENS = 64
#: Characters of a text that decide whether its save embeds it: eight a token, more than any prose's first
#: `INLINE_EMBEDDING_TOKENS` take (English averages under five), so a long text is judged by its start, not tokenized
#: up to the model's bound (4,096 Han characters cost a save 4.7 ms to count).
JUDGED_CHARACTERS = INLINE_EMBEDDING_TOKENS * 8
#: Memories waiting for their vector at most; past it a save embeds its own (back-pressure, not loss).
DEFAULT_QUEUE_BOUND = 256
#: Memories embedded in one model call and written in one transaction.
_BATCH = 16
#: How long the thread waits, once a memory is queued, for the batch to fill before it embeds what it has: the save
#: that queued it is still running its `similar` look-up and its answer (10-20 ms at the bounds), which the
#: embedding would otherwise share the machine with, and a burst of saves goes in one model call.
LINGER_SECONDS = 0.05
#: The name of the thread writing them (a benchmark tells its work from the requests' by it).
THREAD_NAME = "memorybank-deferred-vectors"


class DeferredVectors:
    """A worker's queue of saved memories whose vectors are still to be written, and the thread writing them."""

    def __init__(self, engine: sa.Engine, codec: RowCodec, embedder: Embedder) -> None:
        self._engine = engine
        self._codec = codec
        self._embedder = embedder
        self._bound = DEFAULT_QUEUE_BOUND
        self._waiting: deque[Memory] = deque()
        self._busy = 0
        self._changed = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def defers(self, text: str) -> bool:
        """Whether a write of embedding text `text` leaves its vector to this queue: a text the model reads more than
        `INLINE_EMBEDDING_TOKENS` of."""
        head = text[:JUDGED_CHARACTERS]
        cut = head.rfind(" ") if len(head) < len(text) else -1
        # Whole words only: a word cut in two can be more tokens than the word (`unbelievable`, `unbeli`).
        head = head[:cut] if cut > 0 else head
        if self._embedder.token_count(head) > INLINE_EMBEDDING_TOKENS:
            return True
        # A start of few tokens (long words, long blanks) says nothing of the rest.
        return len(head) < len(text) and self._embedder.token_count(text) > INLINE_EMBEDDING_TOKENS

    def write_later(self, memory: Memory) -> None:
        """Queue `memory` (committed) for its vector; when the queue is full or stopped, write it now instead. Never
        raises: the save stands whatever happens to its vector (one not written is the next fill's)."""
        with self._changed:
            queued = not self._stopped and len(self._waiting) + self._busy < self._bound
            if queued:
                self._waiting.append(memory)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                    self._thread.start()
                self._changed.notify_all()
        if not queued:
            self._write([memory])

    def _write(self, memories: list[Memory]) -> None:
        try:
            embed_memories(self._engine, self._codec, self._embedder, memories)
        except Exception as error:  # a lost database must not undo a save, nor end the thread
            _log.warning("vectors: %d deferred vectors not written (%s)", len(memories), type(error).__name__)

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until every queued vector is written (or given up); False if `timeout` seconds passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._waiting and not self._busy, timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the batch in hand; what still waits is left to the next start's fill. Idempotent."""
        with self._changed:
            self._stopped = True
            left = len(self._waiting)
            self._waiting.clear()
            self._changed.notify_all()
        if left:
            _log.info("vectors: %d memories left for the next start's fill", left)
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._waiting or self._stopped)
                self._changed.wait_for(lambda: len(self._waiting) >= _BATCH or self._stopped, LINGER_SECONDS)
                if self._stopped:
                    return
                batch = [self._waiting.popleft() for _ in range(min(_BATCH, len(self._waiting)))]
                self._busy = len(batch)
            self._write(batch)
            with self._changed:
                self._busy = 0
                self._changed.notify_all()
