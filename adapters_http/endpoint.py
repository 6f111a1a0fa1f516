"""What every memory route does around its handler: request id, principal, error mapping, access event.

It lives in the route itself, not in app middleware, so a host that mounts the routes
in its own app gets the same behaviour.
"""

from __future__ import annotations

import logging
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters_http.auth import (
    IN_PROCESS_BODY_KEY,
    BlockingResolver,
    CallerRefusedError,
    DeferredPrincipal,
    PrincipalResolver,
    awaitable_resolver,
    in_process_principal,
)
from adapters_http.errors import error_response, internal_error_response, json_error
from adapters_http.inputs import MAX_BODY_BYTES, receive_body
from adapters_http.observation import CURRENT_REQUEST_ID, RequestObserver
from adapters_http.refusals import UnauthorizedError
from adapters_http.throttling import rate_limit_headers
from memorybank_core.bodies import Body, JsonValue
from memorybank_core.ports import Principal, UnitOfWork
from memorybank_core.rate_limits import Operation, RateLimits
from memorybank_core.rate_windows import WindowState

Handler = Callable[[Request, Principal, Body | None], Response]
"""A route handler, run in a worker thread: the request, the caller's principal and its body (for the core to
read after its gate) in, a response out."""

Endpoint = Callable[[Request], Awaitable[Response]]
"""A Starlette request-response endpoint."""

REQUEST_ID_HEADER = "X-Request-Id"
NOSNIFF = ("X-Content-Type-Options", "nosniff")
"""On every answer: no browser may read a JSON body (which may quote what a caller sent) as HTML or script."""
REQUEST_ID_KEY = "memorybank.request_id"
"""ASGI scope key holding the request id, so every layer logs and returns the same one."""

_log = logging.getLogger("memorybank.http")


def tag_response(response: Response, rid: str) -> Response:
    """`response` with the request's id and `X-Content-Type-Options: nosniff`, as every answer carries them.

    Set by the routes themselves (a host mounting them in its own app gets the same) and by
    `ResponseHeadersMiddleware` for what the routes never see (the router's 404s and 405s).
    """
    response.headers[REQUEST_ID_HEADER] = rid
    response.headers[NOSNIFF[0]] = NOSNIFF[1]
    return response


def request_id(scope: Scope) -> str:
    """The request's id, made on first use and kept in the scope; also the running context's (for log lines)."""
    existing = scope.get(REQUEST_ID_KEY)
    if isinstance(existing, str):
        rid = existing
    else:
        rid = uuid.uuid4().hex
        scope[REQUEST_ID_KEY] = rid
    CURRENT_REQUEST_ID.set(rid)
    return rid


def authenticated_endpoint(
    handler: Handler,
    resolver: PrincipalResolver,
    *,
    operation_id: str,
    operation: Operation,
    unit_of_work: UnitOfWork,
    takes_body: bool = False,
    max_body_bytes: int = MAX_BODY_BYTES,
    resource_metadata: str | None = None,
    observer: RequestObserver | None = None,
    rate_limits: RateLimits | None = None,
) -> Endpoint:
    """Wrap `handler`: resolve the principal (401 without one), check its rate limit, map errors, tag and log.

    One thread-pool hop per request: the body (when `takes_body`) is received first, then the
    credential check of a `BlockingResolver` and the handler run in one worker-thread call, inside
    one `unit_of_work` (one database connection for the token check and the use case). Another
    resolver is awaited first, then the handler gets the one hop. The rate-limit check runs in that
    same hop, between the credential check and the handler.

    `resource_metadata` is the URL of the server's protected-resource metadata, named in bearer challenges.
    `rate_limits` is checked for `operation` once the caller is known, so a request without valid
    credentials counts against nobody; its state goes out in `RateLimit-*` headers, a refusal is a 429.

    The access event carries the operationId, status and timing, never the path or query
    string: those may hold ids and search text. `observer` (metrics) is told the same.

    Raises:
        TypeError: `resolver` is synchronous and not wrapped in `BlockingResolver` (see `awaitable_resolver`).
    """
    resolver = awaitable_resolver(resolver)
    resolve_blocking = resolver.resolve_blocking if isinstance(resolver, BlockingResolver) else None

    def admit_and_handle(request: Request, principal: Principal, body: Body | None, admission: _Admission) -> Response:
        # In the worker thread: a Redis-backed limiter waits on the network here, not on the event loop.
        if rate_limits is not None:
            admission.window = rate_limits.admit(principal, operation)
        return handler(request, principal, body)

    def authenticate_and_handle(request: Request, body: Body | None, admission: _Admission) -> Response:
        assert resolve_blocking is not None  # noqa: S101 - called only for a BlockingResolver
        with unit_of_work():
            principal = resolve_blocking(request)
            if principal is None:
                raise UnauthorizedError
            return admit_and_handle(request, principal, body, admission)

    def handle(request: Request, principal: Principal, body: Body | None, admission: _Admission) -> Response:
        with unit_of_work():
            return admit_and_handle(request, principal, body, admission)

    def check_and_handle(
        request: Request, deferred: DeferredPrincipal, body: Body | None, admission: _Admission
    ) -> Response:
        with unit_of_work():
            return admit_and_handle(request, deferred.resolve(), body, admission)

    async def endpoint(request: Request) -> Response:
        rid = request_id(request.scope)
        started = time.perf_counter()
        failure: Exception | None = None
        # Filled in the worker thread once the caller is admitted, so error answers after it carry the headers too.
        admission = _Admission()
        try:
            principal = in_process_principal(request)
            body = await _body(request, max_body_bytes) if takes_body else None
            if isinstance(principal, DeferredPrincipal):
                response = await run_in_threadpool(check_and_handle, request, principal, body, admission)
            elif principal is None and resolve_blocking is not None:
                response = await run_in_threadpool(authenticate_and_handle, request, body, admission)
            else:
                if principal is None:
                    principal = await resolver(request)
                if principal is None:
                    raise UnauthorizedError
                response = await run_in_threadpool(handle, request, principal, body, admission)
        except CallerRefusedError:
            raise  # the in-process caller answers its own refusal; the route never admitted it
        except ClientDisconnect:
            # Nobody is left to answer; the status is only for the access event.
            response = json_error(400, {"error": "invalid_request", "message": "The client disconnected."})
        except Exception as error:
            failure = error
            mapped = error_response(error, resource_metadata=resource_metadata)
            if mapped is None:
                log_unexpected(error, rid, operation_id)
                mapped = internal_error_response()
            response = mapped
        if admission.window is not None and "RateLimit-Limit" not in response.headers:
            response.headers.update(rate_limit_headers(admission.window))
        tag_response(response, rid)
        seconds = time.perf_counter() - started
        if observer is not None:
            observer.observe_request(
                operation_id=operation_id, status=response.status_code, seconds=seconds, error=failure
            )
        if _log.isEnabledFor(logging.INFO):
            duration_ms = round(seconds * 1000, 3)
            _log.info(
                "http.request operation=%s status=%s duration_ms=%s request_id=%s",
                operation_id,
                response.status_code,
                duration_ms,
                rid,
                extra={
                    "event": "http.request",
                    "event_fields": {
                        "operation_id": operation_id,
                        "status": response.status_code,
                        "duration_ms": duration_ms,
                        "request_id": rid,
                    },
                },
            )
        return response

    return endpoint


async def _body(request: Request, max_bytes: int) -> Body:
    """The request's body for the core: an in-process caller's decoded JSON as is, else the bytes received."""
    if IN_PROCESS_BODY_KEY in request.scope:
        return JsonValue(request.scope[IN_PROCESS_BODY_KEY])
    return (await receive_body(request, max_bytes=max_bytes)).as_body()


class _Admission:
    """What the rate-limit check said about one request (None: no limit applied, or the limiter was down)."""

    window: WindowState | None = None


def log_unexpected(error: BaseException, rid: str, where: str) -> None:
    """Log an unexpected error with its request id: exception types and stack frames only.

    Messages are left out on purpose: a driver's message can quote the SQL parameters,
    that is, memory content or search text.
    """
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__module__}.{type(current).__qualname__}\n")
        parts.extend(traceback.format_tb(current.__traceback__))
        current = current.__cause__ or current.__context__
    _log.error("unexpected error in %s request_id=%s\n%s", where, rid, "".join(parts).rstrip())


class ResponseHeadersMiddleware:
    """Give every response of the app an `X-Request-Id` and `X-Content-Type-Options: nosniff`, including the
    router's 404s and 405s (the headers `tag_response` sets; a value already set is kept)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app, adding the header to the response start."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)

        added = ((b"x-request-id", rid.encode("ascii")), (NOSNIFF[0].lower().encode(), NOSNIFF[1].encode()))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in added if name not in present]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_id)
