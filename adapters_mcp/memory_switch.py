"""Whether memory is on for the rail's caller, decided once per request and read wherever the rail needs it.

When an operator switches memory off for a principal (memorybank_core.controls), the rail hides
memory rather than offering capabilities that would only answer 403: `search_capabilities`
finds none, and the server's instructions leave out the `## Memory Bank` section. A capability
executed anyway gets the REST route's own `403 memory_disabled`.

`MemorySwitch` (ASGI, behind the bearer check) asks the bank once per request, off the event
loop, and keeps the answer in a context variable for the SDK's handlers of that request.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters_http import error_response
from memorybank_core import Principal, UnavailableError

MemoryEnabled = Callable[[Principal], bool]
"""Whether memory is on for a principal now (`MemoryBank.memory_enabled`)."""

#: Outside a request (stdio, tests calling the rail directly) memory is on: the routes still gate.
_MEMORY_ON: ContextVar[bool] = ContextVar("memorybank_memory_on", default=True)


def memory_on() -> bool:
    """Whether memory is on for the caller of the request being handled."""
    return _MEMORY_ON.get()


class MemorySwitch:
    """ASGI middleware: decide whether memory is on for the request's principal (set by the bearer check)."""

    def __init__(self, app: ASGIApp, memory_enabled: MemoryEnabled, *, principal_key: str) -> None:
        self._app = app
        self._memory_enabled = memory_enabled
        self._principal_key = principal_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal: Principal | None = scope.get(self._principal_key)
        if scope["type"] != "http" or principal is None:
            await self._app(scope, receive, send)
            return
        try:
            on = await run_in_threadpool(self._memory_enabled, principal)
        except UnavailableError as error:
            unavailable = error_response(error)
            if unavailable is None:  # the error table maps UnavailableError
                raise
            await unavailable(scope, receive, send)
            return
        # The SDK runs this request's handlers in a task started from here, which copies the context.
        token = _MEMORY_ON.set(on)
        try:
            await self._app(scope, receive, send)
        finally:
            _MEMORY_ON.reset(token)
