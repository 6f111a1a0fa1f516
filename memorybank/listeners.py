"""The sockets `memorybank serve` listens on: one for a single process, one per worker with `--workers N`.

A listener shared by several workers hands a burst of new connections to whichever worker wakes
first (asyncio accepts up to a hundred per wake-up): measured here, one of two workers took all 16
of a load generator's keep-alive connections and the other sat idle. So each worker listens on a
socket of its own, all bound to the same port with `SO_REUSEPORT`, and the kernel spreads new
connections over them by address hash. The parent keeps one more such socket bound (never
listening, so it is handed no connection) for as long as it runs: nothing else can take the port
while workers come and go.
"""

from __future__ import annotations

import socket
from typing import Any, TypeVar

_Socket = TypeVar("_Socket", bound=socket.socket)

#: Linux and the BSDs have it; elsewhere the workers share the parent's listener as uvicorn does.
SPREADS_CONNECTIONS = hasattr(socket, "SO_REUSEPORT")


def tcp_listener(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A TCP socket bound to `host:port` with SO_REUSEADDR (and SO_REUSEPORT if asked), not yet listening.

    Raises:
        OSError: the address cannot be bound (socket.gaierror for an unknown host name).
    """
    return _bound(socket.socket, host, port, reuse_port=reuse_port)


def _bound(kind: type[_Socket], host: str, port: int, *, reuse_port: bool) -> _Socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns TCP_NODELAY on only for accepted sockets whose proto says TCP.
    # Without it, Nagle holds each response's body until the client's delayed ACK of its head: about
    # 40 ms added to every keep-alive request.
    listener = kind(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind((host, port))
    except BaseException:
        listener.close()
        raise
    return listener


def worker_listener(host: str, port: int) -> socket.socket:
    """A worker's own listener on the port the parent holds (called in the worker, as it unpickles)."""
    return tcp_listener(host, port, reuse_port=True)


class HeldPort(socket.socket):
    """The parent's hold on the workers' port; each worker that receives it gets a listener of its own.

    uvicorn hands its sockets to the workers it spawns by pickling them; this one pickles as the
    call that makes a fresh `SO_REUSEPORT` listener on the same address in the worker.
    """

    @classmethod
    def bind_to(cls, host: str, port: int) -> HeldPort:
        """Bind `host:port` with SO_REUSEPORT (not listening).

        Raises:
            OSError: the address cannot be bound, e.g. another server holds it.
        """
        return _bound(cls, host, port, reuse_port=True)

    def __reduce__(self) -> tuple[Any, tuple[str, int]]:
        host, port = self.getsockname()[:2]
        return (worker_listener, (host, port))
