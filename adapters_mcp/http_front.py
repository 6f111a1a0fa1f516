"""What the rail's HTTP endpoint settles before the MCP SDK sees a request.

The rail is stateless: every request is one POST, answered on its own. So:

- any other method is 405 with `Allow: POST`. A GET would otherwise open a server-to-client
  event stream that nothing ever writes to or closes (one file descriptor per GET, for ever);
- a body that is not one well-formed JSON-RPC message gets a short JSON-RPC error naming what
  is wrong, instead of the SDK's validation dump, which echoes the input back;
- a body over the REST API's cap (`adapters_http.MAX_BODY_BYTES`, 1 MiB: one cap for every route)
  gets 413 with a JSON-RPC error, whether it declares its length or arrives chunked without one;
- the SDK's "Terminating session: None" line, logged after every stateless POST, is dropped.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters_http import MAX_BODY_BYTES, method_not_allowed
from memorybank_core.strict_json import RepeatedKeyError, strict_json

#: JSON-RPC 2.0 error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_SDK_TRANSPORT_LOGGER = "mcp.server.streamable_http"


class PostOnly:
    """ASGI middleware: only POST reaches the rail; every other method is 405 with `Allow: POST`."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] != "POST":
            await method_not_allowed("POST")(scope, receive, send)
            return
        await self._app(scope, receive, send)


class EnvelopeCheck:
    """ASGI middleware: a POST body must be one JSON-RPC 2.0 message within the byte cap, or it gets a short
    JSON-RPC error (400; 413 over the cap)."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self._app = app
        self._max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_body_bytes:
            await self._too_large()(scope, receive, send)  # refused unread
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if len(body) > self._max_body_bytes:
                await self._too_large()(scope, receive, send)
                return
        problem = envelope_problem(bytes(body))
        if problem is not None:
            await rpc_error(*problem, status=400)(scope, receive, send)
            return
        await self._app(scope, _replay(bytes(body), receive), send)

    def _too_large(self) -> JSONResponse:
        reason = f"Request too large: the body must be at most {self._max_body_bytes} bytes"
        return rpc_error(INVALID_REQUEST, reason, status=413)


def rpc_error(code: int, reason: str, *, status: int) -> JSONResponse:
    """A JSON-RPC 2.0 error answer to a message we could not read (so its id is null), with HTTP `status`."""
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": reason}}, status_code=status)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands out the already-read body once, then defers to the real one (disconnects)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def envelope_problem(body: bytes) -> tuple[int, str] | None:
    """What makes `body` not one JSON-RPC 2.0 message, as (error code, short reason); None when it is one."""
    try:
        message: Any = strict_json(body)
    except RepeatedKeyError:
        return PARSE_ERROR, "Parse error: an object in the body names the same key twice"
    except (ValueError, RecursionError):
        # ValueError covers bad UTF-8 and bad syntax; RecursionError absurd nesting, which must not reach the SDK.
        return PARSE_ERROR, "Parse error: the body is not valid JSON"
    if isinstance(message, list):
        return INVALID_REQUEST, "Invalid request: send one JSON-RPC message per request, not a batch"
    if not isinstance(message, dict):
        return INVALID_REQUEST, "Invalid request: the body must be a JSON-RPC message object"
    reason = _message_problem(message)
    return None if reason is None else (INVALID_REQUEST, f"Invalid request: {reason}")


def _message_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "id" in message and not _is_id(message["id"]) and not ("error" in message and message["id"] is None):
        return '"id" must be a string or an integer'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if "params" in message and not isinstance(message["params"], dict | None):
            return '"params" must be an object'
        return None
    if "id" not in message:
        return 'a request needs "method" and "id"; a notification needs "method"'
    if "result" in message:
        return None if isinstance(message["result"], dict) else '"result" must be an object'
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict) or not _is_int(error.get("code")) or not isinstance(error.get("message"), str):
            return '"error" must be an object with an integer "code" and a string "message"'
        return None
    return 'a request needs "method"; a response needs "result" or "error"'


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_id(value: object) -> bool:
    return isinstance(value, str) or _is_int(value)


class _DropStatelessTeardown(logging.Filter):
    """Drops the SDK's "Terminating session: None" line: a stateless request ending, not news."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno <= logging.INFO and record.getMessage() == "Terminating session: None")


_TEARDOWN_FILTER = _DropStatelessTeardown()


def quiet_stateless_teardown() -> None:
    """Attach the filter to the SDK's transport logger (once); its warnings and errors still pass."""
    logger = logging.getLogger(_SDK_TRANSPORT_LOGGER)
    if _TEARDOWN_FILTER not in logger.filters:
        logger.addFilter(_TEARDOWN_FILTER)
