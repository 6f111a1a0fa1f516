"""Calling the REST app in-process: one ASGI request, no socket, with the caller's principal (or its check).

The rail goes through the real routes (not the use cases) so validation, owner-scoping,
status codes and error bodies are exactly the REST API's. The principal travels in the
ASGI scope under `adapters_http.IN_PROCESS_PRINCIPAL_KEY`, which no HTTP client can set; a
`DeferredPrincipal` there is checked by the route in its own worker-thread call. A JSON body
the rail already decoded travels as data (`IN_PROCESS_BODY_KEY`), never encoded to be decoded again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import quote, urlencode

import anyio
import attrs
from starlette.types import ASGIApp, Message, Scope

from adapters_http import IN_PROCESS_BODY_KEY, IN_PROCESS_PRINCIPAL_KEY, DeferredPrincipal
from memorybank_core import Principal

QueryValue = str | int | float | bool
"""A scalar a query string can carry."""

#: The Host the REST app sees: in-process requests never come from the network.
IN_PROCESS_HOST = "memorybank.internal"


@attrs.frozen(kw_only=True)
class HttpAnswer:
    """What the route answered."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)


class NoResponseError(RuntimeError):
    """The app finished without starting a response (a bug in the app)."""


def fill_path(template: str, values: Mapping[str, str]) -> str:
    """`template` (`/v1/memory/{id}`) with each `{name}` replaced by its percent-encoded value.

    Every reserved character is encoded, `/` included, so a value such as `../search` stays
    inside its one path segment and can only reach the route the template names.

    Raises:
        KeyError: a parameter of the template has no value.
    """
    segments = []
    for segment in template.split("/"):
        if segment.startswith("{") and segment.endswith("}"):
            segment = quote(values[segment[1:-1]], safe="")
        segments.append(segment)
    return "/".join(segments)


def query_string(query: Mapping[str, QueryValue | Sequence[QueryValue]]) -> bytes:
    """`query` as an encoded query string; a list repeats its key, booleans are `true`/`false`."""
    pairs: list[tuple[str, str]] = []
    for key, value in query.items():
        items: Sequence[QueryValue] = [value] if isinstance(value, str | int | float | bool) else value
        pairs.extend((key, _scalar(item)) for item in items)
    return urlencode(pairs).encode("ascii")


def _scalar(value: QueryValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def call_app(
    app: ASGIApp,
    *,
    method: str,
    path: str,
    query: bytes = b"",
    body: object = None,
    principal: Principal | DeferredPrincipal,
) -> HttpAnswer:
    """Send one request to `app` as `principal` and collect the whole answer.

    `body` is the request's JSON body as data (None: no body); the route hands it to the core as is.

    `path` must already be percent-encoded (see `fill_path`). It is given to the app as is,
    as both `path` and `raw_path`: the router then matches encoded segments, so an encoded
    `/` can never split a parameter into two segments of another route.

    Raises:
        NoResponseError: the app returned without answering.
    """
    headers = [(b"host", IN_PROCESS_HOST.encode("ascii")), (b"accept", b"application/json")]
    if body is not None:
        headers.append((b"content-type", b"application/json"))
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method.upper(),
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("ascii"),
        "root_path": "",
        "query_string": query,
        "headers": headers,
        "client": None,
        "server": (IN_PROCESS_HOST, 80),
        "state": {},
        IN_PROCESS_PRINCIPAL_KEY: principal,
    }
    if body is not None:
        scope[IN_PROCESS_BODY_KEY] = body
    request_sent = False
    disconnected = anyio.Event()
    status: int | None = None
    response_headers: list[tuple[str, str]] = []
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal request_sent
        if not request_sent:
            request_sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        # A second read means the app waits for a disconnect: it only comes once the answer is complete.
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
            response_headers.extend(
                (bytes(k).decode("latin-1").lower(), bytes(v).decode("latin-1")) for k, v in message.get("headers", [])
            )
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                disconnected.set()

    try:
        await app(scope, receive, send)
    finally:
        disconnected.set()
    if status is None:
        raise NoResponseError(f"{method} {path} ended without a response")
    return HttpAnswer(status=status, headers=tuple(response_headers), body=b"".join(chunks))
