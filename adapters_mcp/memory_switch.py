"""Whether memory is on for the rail's caller, decided once per request and read wherever the rail needs it.

When an operator switches memory off for a principal (memorybank_core.controls), the rail hides
memory rather than offering capabilities that would only answer 403: `search_capabilities`
finds none, and the server's instructions leave out the `## Memory Bank` section. A capability
executed anyway gets the REST route's own `403 memory_disabled`.

The rail's endpoint (adapters_mcp.exchange) asks the bank once per request, in the same worker-thread
call and unit of work as the bearer check, and keeps the answer in a context variable for the SDK's
handlers of that request (`memory_switched`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from memorybank_core import Principal

MemoryEnabled = Callable[[Principal], bool]
"""Whether memory is on for a principal now (`MemoryBank.memory_enabled`)."""

#: Outside a request (stdio, tests calling the rail directly) memory is on: the routes still gate.
_MEMORY_ON: ContextVar[bool] = ContextVar("memorybank_memory_on", default=True)


def memory_on() -> bool:
    """Whether memory is on for the caller of the request being handled."""
    return _MEMORY_ON.get()


@contextmanager
def memory_switched(on: bool) -> Iterator[None]:
    """Within the block (and the tasks it starts, which copy the context), `memory_on()` is `on`."""
    token = _MEMORY_ON.set(on)
    try:
        yield
    finally:
        _MEMORY_ON.reset(token)
