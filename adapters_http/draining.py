"""Draining: once the server is stopping, every response closes its connection.

A keep-alive client would otherwise go on sending requests over a connection the server
still holds while it waits for in-flight requests to finish, until the graceful-shutdown
timeout cancels one mid-way. With `Connection: close` each client finishes its current
request, gets its answer, and reconnects elsewhere (another instance, or after a restart).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ConnectionDraining:
    """ASGI middleware: after `begin()`, responses carry `Connection: close`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.draining = False

    def begin(self) -> None:
        """Start draining (safe to call from a signal handler: it only sets a flag)."""
        self.draining = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; mark the response start when draining."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and self.draining:
                headers = [(name, value) for name, value in message.get("headers", []) if name.lower() != b"connection"]
                message["headers"] = [*headers, (b"connection", b"close")]
            await send(message)

        await self.app(scope, receive, send_closing)
