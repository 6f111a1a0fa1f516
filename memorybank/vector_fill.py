"""Filling in the vectors a database's memories lack, behind a server that already serves.

A server started with hybrid search on a database whose memories have no vectors yet (saved by a
lexical server, an import, or before hybrid search was the default) does not refuse or wait: it
serves at once, finding those memories by their words (memorybank_search.fusion), and a background
thread writes their vectors batch by batch (`SqlStorage.embed_missing`, what `memorybank reindex
--embeddings` runs), each batch its own transaction. Progress goes to the log (counts only, never
content) and to `/readyz`'s details. Stopping the server stops the walk after its batch; the next
start resumes with the memories still lacking a vector.

With several workers (`serve --workers N`) one worker fills: the first to create the claim file in
the directory the workers share claims the walk and writes its progress there, the others read it
for their `/readyz`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters_mysql import SqlStorage

_log = logging.getLogger("memorybank.vectors")

CLAIM_FILE = "vector-fill.claim"
PROGRESS_FILE = "vector-fill.json"
#: At most one progress line per this many seconds (and one at the end).
LOG_EVERY_SECONDS = 10.0


class _Stopped(Exception):
    """Raised from the progress callback to end the walk after the batch it reports."""


class VectorFill:
    """Writes the vectors `storage`'s memories lack, in a daemon thread; `details()` says how far it is."""

    def __init__(self, storage: SqlStorage, *, shared_dir: Path | None = None) -> None:
        self._storage = storage
        self._shared_dir = shared_dir
        self._lock = threading.Lock()
        self._state = "starting"
        self._total = 0
        self._embedded = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._claimed = shared_dir is None
        self._last_log = 0.0

    def start(self) -> None:
        """Count what lacks a vector and, if anything does, start writing them in the background.

        Counting reads the database: an unreachable one leaves the state `failed` (logged), the server serves on.
        """
        if self._shared_dir is not None:
            self._claimed = _claim(self._shared_dir / CLAIM_FILE)
            if not self._claimed:
                return  # another worker fills; details() reads its progress
        try:
            total = self._storage.count_to_embed()
        except Exception:  # the server must start whatever the database says now
            _log.warning("vectors: could not count the memories without one; not filled now", exc_info=True)
            self._set(state="failed")
            return
        self._set(state="filling" if total else "complete", total=total)
        if not total:
            return
        _log.info("vectors: %d memories have none yet; they are found by their words until filled", total)
        self._thread = threading.Thread(target=self._run, name="memorybank-vector-fill", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """End the walk after the batch in hand (the next start resumes it)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def details(self) -> dict[str, Any]:
        """`{"state": "filling" | "complete" | "stopped" | "failed", "embedded": n, "total": n}` for `/readyz`."""
        if not self._claimed and self._shared_dir is not None:
            return _read(self._shared_dir / PROGRESS_FILE) or {"state": "filling in another worker"}
        with self._lock:
            return {"state": self._state, "embedded": self._embedded, "total": self._total}

    def _run(self) -> None:
        started = time.monotonic()
        try:
            report = self._storage.embed_missing(progress=self._advance)
        except _Stopped:
            self._set(state="stopped")
            _log.info("vectors: stopped after %d of %d; the next start resumes", self._embedded, self._total)
            return
        except Exception:
            self._set(state="failed")
            _log.warning("vectors: the fill stopped after %d of %d", self._embedded, self._total, exc_info=True)
            return
        self._set(state="complete")
        _log.info(
            "vectors: filled %d memories in %.0f s (%d did not open and were skipped)",
            report.embedded,
            time.monotonic() - started,
            report.skipped,
        )

    def _advance(self, count: int) -> None:
        with self._lock:
            self._embedded += count
            embedded, total = self._embedded, self._total
        self._publish()
        now = time.monotonic()
        if now - self._last_log >= LOG_EVERY_SECONDS:
            self._last_log = now
            _log.info("vectors: %d of %d memories embedded", embedded, total)
        if self._stop.is_set():
            raise _Stopped

    def _set(self, *, state: str, total: int | None = None) -> None:
        with self._lock:
            self._state = state
            if total is not None:
                self._total = total
        self._publish()

    def _publish(self) -> None:
        if self._shared_dir is None:
            return
        target = self._shared_dir / PROGRESS_FILE
        partial = target.with_suffix(".tmp")
        with contextlib.suppress(OSError):  # progress for /readyz only: never worth failing the fill
            partial.write_text(json.dumps(self.details()))
            os.replace(partial, target)


def _claim(path: Path) -> bool:
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    except OSError:
        return True  # no shared directory to agree in: fill (a second walker only repeats work, safely)
    os.close(descriptor)
    return True


def _read(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None
