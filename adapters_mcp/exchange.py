"""The rail's endpoint: one pass over each POST to `/mcp/agent`.

The rail is stateless: every request is one POST, answered on its own. The SDK's stateless
streamable-HTTP transport serves each such POST with a whole session's machinery (a transport,
memory streams, a dispatcher task in the manager's task group, an SSE response task), about a
millisecond of the event loop per request on our VM (docs/benchmarks.md, "The agent's path").
So `RailEndpoint` settles a POST itself, in one pass:

- any method but POST is 405 with `Allow: POST` (a GET would open an event stream nothing closes);
- the body is read once, within the REST API's cap (413 as a JSON-RPC error), and decoded once
  (`memorybank_core.strict_json`, the one decoder of untrusted JSON) into one JSON-RPC message, or
  a short JSON-RPC error naming what is wrong (never the SDK's validation dump, which echoes input);
- the caller is authenticated once, by the REST API's own tokens, before anything else is reported
  (401 `missing_mcp_token` / `invalid_mcp_token`, 403 `insufficient_mcp_scope`, 503), and the gate is
  read once, in the same thread-pool hop and unit of work;
- a request (a `method` and an `id`, on a handshake-era protocol version, with the headers the SDK
  asks for) is answered by the SDK's own single-request kernel (`mcp.server.runner.serve_one`: its
  `initialize`, method validation and result shapes) and written as the one SSE event (or JSON) the
  SDK's transport would write, byte for byte (tests/mcp/test_exchange.py compares them);
- `tools/call` of `execute_capability`, the agent's hot path, goes straight to the capability: the
  bearer check is handed to the REST route as a `DeferredPrincipal`, so the check, the gate and the use
  case run in the route's one thread-pool hop and one unit of work; the body argument goes to the core
  as the data it already is; and the route's JSON answer is wrapped without being decoded and encoded
  again (`CapabilityRail.execute_result_parts`), and the response written in one join of its parts;
- anything else (a notification, the 2026-07-28 protocol, headers the SDK refuses) goes to the SDK's
  stateless transport, unchanged, once the caller is authenticated; its "Terminating session: None"
  line, logged after every stateless POST, is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import anyio
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION, RequestId
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters_http import (
    MAX_BODY_BYTES,
    Authenticate,
    CallerRefusedError,
    DeferredPrincipal,
    bearer_secret,
    error_response,
    method_not_allowed,
)
from adapters_http.refusals import RailScopeMissingError, RailTokenMissingError, RailTokenRefusedError
from adapters_mcp.memory_switch import MemoryEnabled, memory_switched
from adapters_mcp.tools import EXECUTE_TOOL, CapabilityRail
from memorybank_core import CredentialsRefusedError, Principal, UnavailableError
from memorybank_core.ports import UnitOfWork
from memorybank_core.strict_json import RepeatedKeyError, strict_json

#: JSON-RPC 2.0 error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600

MCP_PRINCIPAL_KEY = "memorybank.mcp.principal"
"""ASGI scope key under which the endpoint leaves the authenticated caller for the tool handlers."""

_PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
_CONTENT_TYPE_JSON = "application/json"
#: What the SDK's transport sends with its one-event SSE answer (`EventSourceResponse`'s headers and its own).
_SSE_HEADERS = (
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"content-type", b"text/event-stream"),
    (b"x-accel-buffering", b"no"),
)

logger = logging.getLogger(__name__)
_SDK_TRANSPORT_LOGGER = "mcp.server.streamable_http"


def rail_principal(authenticate: Authenticate, secret: str, scopes: tuple[str, ...]) -> Principal:
    """The caller behind a bearer `secret`, if it may enter the rail at all (any of `scopes`).

    Raises:
        RailTokenRefusedError, RailScopeMissingError: no entry (401, 403).
        UnavailableError: the token store or issuer is down (503).
    """
    try:
        principal = authenticate(secret)
    except CredentialsRefusedError as refused:
        raise RailTokenRefusedError(scopes, refused.reason) from refused
    if principal is None:
        raise RailTokenRefusedError(scopes)
    if not set(principal.scopes) & set(scopes):
        raise RailScopeMissingError(scopes)
    return principal


def rpc_error(code: int, reason: str, *, status: int) -> JSONResponse:
    """A JSON-RPC 2.0 error answer to a message we could not read (so its id is null), with HTTP `status`."""
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": reason}}, status_code=status)


def envelope_problem(message: object) -> tuple[int, str] | None:
    """What makes a decoded body not one JSON-RPC 2.0 message, as (error code, short reason); None when it is one."""
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


@dataclass
class _OneRequest:
    """The SDK's dispatch context for one request answered on its own POST: no back-channel, nowhere to notify."""

    transport: TransportContext
    request_id: RequestId
    message_metadata: MessageMetadata
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = field(default=False, init=False)

    async def send_raw_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,  # noqa: ARG002 - the protocol's signature
        opts: CallOptions | None = None,  # noqa: ARG002
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:  # noqa: ARG002
        return None  # a stateless POST carries its one answer; the rail's handlers send no notifications

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:  # noqa: ARG002
        return None


@dataclass(frozen=True)
class _Received:
    """A POST body as read: the bytes, or that they went over the cap (or the client left)."""

    data: bytes = b""
    too_large: bool = False
    disconnected: bool = False


class RailEndpoint:
    """The ASGI app of the rail's path (see the module's docstring)."""

    def __init__(
        self,
        *,
        server: Server[Any],
        sdk_app: ASGIApp,
        rail: CapabilityRail,
        authenticate: Authenticate,
        scopes: tuple[str, ...],
        metadata_url: Callable[[Scope], str],
        security: TransportSecuritySettings,
        json_response: bool,
        memory_enabled: MemoryEnabled | None = None,
        unit_of_work: UnitOfWork | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        agent_path: str = "/agent",
    ) -> None:
        self._server = server
        self._sdk_app = sdk_app
        self._rail = rail
        self._authenticate = authenticate
        self._scopes = scopes
        self._metadata_url = metadata_url
        self._security = TransportSecurityMiddleware(security)
        self._json_response = json_response
        self._memory_enabled = memory_enabled
        self._unit_of_work = unit_of_work
        self._max_body_bytes = max_body_bytes
        self._agent_path = agent_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._sdk_app(scope, receive, send)
            return
        if scope["method"] != "POST":
            await method_not_allowed("POST")(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            secret = bearer_secret(request)
            if secret is None:
                raise RailTokenMissingError(self._scopes)
        except Exception as error:
            await self._refuse(error, scope, receive, send)
            return
        received = await self._read(scope, receive)
        if received.disconnected:
            return
        message: Any = None
        problem: tuple[int, str] | None = None
        if not received.too_large:
            try:
                message = strict_json(received.data)
            except RepeatedKeyError:
                problem = (PARSE_ERROR, "Parse error: an object in the body names the same key twice")
            except (ValueError, RecursionError):
                # Bad UTF-8 or syntax; RecursionError absurd nesting, which must not reach the SDK.
                problem = (PARSE_ERROR, "Parse error: the body is not valid JSON")
            else:
                problem = envelope_problem(message)
        served_here = problem is None and not received.too_large and await self._served_here(request, message)
        if served_here and _is_execute(message):
            # The hot path: the bearer check, the gate and the use case in the route's one hop.
            await self._execute(request, message, secret, send)
            return
        try:
            principal, memory_on = await run_in_threadpool(self._admit, secret)
        except Exception as error:
            await self._refuse(error, scope, receive, send)
            return
        if received.too_large:
            reason = f"Request too large: the body must be at most {self._max_body_bytes} bytes"
            await rpc_error(INVALID_REQUEST, reason, status=413)(scope, receive, send)
            return
        if problem is not None:
            await rpc_error(*problem, status=400)(scope, receive, send)
            return
        admitted = {**scope, MCP_PRINCIPAL_KEY: principal}
        with memory_switched(memory_on):
            if served_here:
                await self._answer(Request(admitted, receive), message, send)
            else:
                await self._sdk_app(admitted, _replay(received.data, receive), send)

    def _admit(self, secret: str) -> tuple[Principal, bool]:
        """In a worker thread: the caller, and whether memory is on for it, read in one unit of work."""
        with self._unit_of_work() if self._unit_of_work is not None else nullcontext():
            principal = rail_principal(self._authenticate, secret, self._scopes)
            return principal, self._memory_enabled(principal) if self._memory_enabled is not None else True

    async def _refuse(self, error: Exception, scope: Scope, receive: Receive, send: Send) -> None:
        # Every refusal is a row of the facades' one error table (adapters_http.errors).
        refused = error_response(error, resource_metadata=self._metadata_url(scope))
        if refused is None:
            raise error
        if isinstance(error, UnavailableError):
            logger.warning("mcp.auth token store unavailable")
        await refused(scope, receive, send)

    async def _read(self, scope: Scope, receive: Receive) -> _Received:
        declared = Request(scope).headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_body_bytes:
            return _Received(too_large=True)  # refused unread
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return _Received(disconnected=True)
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if len(body) > self._max_body_bytes:
                return _Received(too_large=True)
        return _Received(data=bytes(body))

    async def _served_here(self, request: Request, message: dict[str, Any]) -> bool:
        """Whether this endpoint answers `message` itself, exactly as the SDK's stateless transport would:
        a request on a handshake-era version, with the headers the transport accepts."""
        if _sub_path(request.scope) != self._agent_path or "method" not in message or "id" not in message:
            return False  # a notification or a response: the SDK acknowledges it
        version = request.headers.get(_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False
        if not _is_json_content(request) or await self._security.validate_request(request, is_post=True) is not None:
            return False
        has_json, has_sse = check_accept_headers(request)
        return has_json and (self._json_response or has_sse)

    async def _answer(self, request: Request, message: dict[str, Any], send: Send) -> None:
        """A request through the SDK's single-request kernel, written as its transport would write it."""
        request_id: RequestId = message["id"]
        version = request.headers.get(_PROTOCOL_VERSION_HEADER) or DEFAULT_NEGOTIATED_VERSION
        context = _OneRequest(
            transport=TransportContext(kind="streamable-http", can_send_request=False),
            request_id=request_id,
            message_metadata=ServerMessageMetadata(request_context=request),
        )
        try:
            result = await serve_one(
                self._server,
                context,
                message["method"],
                message.get("params"),
                connection=Connection.from_envelope(version, None, None),
                lifespan_state={},
            )
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                logger.exception("mcp.rail handler for %s raised", message["method"])
                error_json = b'{"code":-32603,"message":"Internal server error"}'
            else:
                error_json = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
            await self._write(request_id, [b'"error":', error_json], send)
            return
        await self._write(request_id, [b'"result":', pydantic_core.to_json(result)], send)

    async def _execute(self, request: Request, message: dict[str, Any], secret: str, send: Send) -> None:
        params: dict[str, Any] = message.get("params") or {}
        version = request.headers.get(_PROTOCOL_VERSION_HEADER) or DEFAULT_NEGOTIATED_VERSION
        authenticate, scopes = self._authenticate, self._scopes

        def check() -> Principal:
            # Runs in the REST route's worker-thread call, inside its unit of work.
            try:
                return rail_principal(authenticate, secret, scopes)
            except Exception as error:
                raise CallerRefusedError(error) from error

        try:
            result = await self._rail.execute_result_parts(
                params.get("arguments"), DeferredPrincipal(check), protocol_version=version
            )
        except CallerRefusedError as refused:
            await self._refuse(refused.error, request.scope, request.receive, send)
            return
        await self._write(message["id"], [b'"result":', *result], send)

    async def _write(self, request_id: RequestId, member: Sequence[bytes], send: Send) -> None:
        """The JSON-RPC response (`member`, in parts, is its `"result": ...` or `"error": ...`), as one SSE event or
        as JSON: joined once, as an answer can be megabytes and every join is a copy."""
        payload = [b'{"jsonrpc":"2.0","id":', pydantic_core.to_json(request_id), b",", *member, b"}"]
        if self._json_response:
            headers: tuple[tuple[bytes, bytes], ...] = ((b"content-type", _CONTENT_TYPE_JSON.encode()),)
            body = b"".join(payload)
        else:
            headers = _SSE_HEADERS
            body = b"".join([b"event: message\r\ndata: ", *payload, b"\r\n\r\n"])
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*headers, (b"content-length", str(len(body)).encode("ascii"))],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})


def _is_execute(message: dict[str, Any]) -> bool:
    """A `tools/call` of `execute_capability` whose params the SDK would accept as they are."""
    params = message.get("params")
    return (
        message["method"] == "tools/call"
        and isinstance(params, dict)
        and params.get("name") == EXECUTE_TOOL
        and isinstance(params.get("arguments", {}), dict | None)
        and set(params) <= {"name", "arguments"}
    )


def _sub_path(scope: Scope) -> str:
    """The path below the mount the endpoint is served under."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _is_json_content(request: Request) -> bool:
    # The SDK's own test (StreamableHTTPServerTransport._check_content_type).
    content_type = request.headers.get("content-type", "")
    return any(part.strip() == _CONTENT_TYPE_JSON for part in content_type.split(";")[0].split(","))


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
