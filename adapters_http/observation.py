"""What the facade tells an observer about each memory request (metrics), and the request id of the running request.

The observer sees the operationId, the status, the duration and the error class, never the
path, query, body or caller: those may hold ids and search text.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

#: The request id of the request this code runs for (also in worker threads: they copy the context).
CURRENT_REQUEST_ID: ContextVar[str | None] = ContextVar("memorybank_request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request being served here, or None outside a request (for log records)."""
    return CURRENT_REQUEST_ID.get()


class RequestObserver(Protocol):
    """Told about every memory request once it has its response (e.g. to count it)."""

    def observe_request(self, *, operation_id: str, status: int, seconds: float, error: Exception | None) -> None:
        """Record one request: its operationId, status, duration and the error it ended in (None on success)."""
        ...
