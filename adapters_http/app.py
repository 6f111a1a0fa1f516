"""Building the Starlette app, or just its memory routes for a host to mount under its own auth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Lifespan

from adapters_http.auth import PrincipalResolver
from adapters_http.endpoint import REQUEST_ID_HEADER, Endpoint, RequestIdMiddleware, guarded, log_unexpected, request_id
from adapters_http.errors import internal_error_response, routing_error
from adapters_http.handlers import MemoryHandlers
from adapters_http.inputs import MAX_BODY_BYTES
from adapters_http.openapi import build_openapi, openapi_route
from adapters_http.routes import MEMORY_ROUTES, RouteSpec, check_route_table
from memorybank_core.use_cases import MemoryBank


def memory_routes(
    bank: MemoryBank,
    resolve_principal: PrincipalResolver,
    *,
    routes: Sequence[RouteSpec] = MEMORY_ROUTES,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> list[BaseRoute]:
    """The memory routes as Starlette routes, for a host to put in its own app (directly or in a `Mount`).

    Each route resolves its caller with `resolve_principal` (or takes the in-process
    principal from the ASGI scope), maps errors to the documented responses and logs
    an access event, whatever app it is mounted in.

    Raises:
        OperationIdError: the route table yields a duplicate, over-long or colliding name.
    """
    check_route_table(routes)
    handlers = MemoryHandlers(bank, max_body_bytes=max_body_bytes)
    # One Starlette route per path, so a 405 lists every method the path allows in `Allow`.
    by_path: dict[str, dict[str, Endpoint]] = {}
    for spec in routes:
        endpoint = guarded(partial(spec.handler, handlers), resolve_principal, operation_id=spec.operation_id)
        by_path.setdefault(spec.starlette_path, {})[spec.method.upper()] = endpoint
    return [Route(path, _by_method(endpoints), methods=list(endpoints)) for path, endpoints in by_path.items()]


def _by_method(endpoints: Mapping[str, Endpoint]) -> Endpoint:
    async def dispatch(request: Request) -> Response:
        # The router only lets through the route's methods (and HEAD where GET is allowed).
        method = "GET" if request.method == "HEAD" else request.method
        return await endpoints[method](request)

    return dispatch


def create_app(
    bank: MemoryBank,
    resolve_principal: PrincipalResolver,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    lifespan: Lifespan[Starlette] | None = None,
    title: str = "memorybank",
) -> Starlette:
    """The standalone HTTP app: the memory routes, a public `GET /openapi.json`, JSON 404/405/500 bodies.

    Every response carries an `X-Request-Id`. `lifespan` is the composition root's
    (e.g. to close storage on shutdown).
    """
    routes: list[BaseRoute] = [
        *memory_routes(bank, resolve_principal, max_body_bytes=max_body_bytes),
        openapi_route(build_openapi(MEMORY_ROUTES, title=title)),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(RequestIdMiddleware)],
        exception_handlers={HTTPException: routing_error, Exception: _unexpected_error},
        lifespan=lifespan,
    )


async def _unexpected_error(request: Request, error: Exception) -> Response:
    # Reached only for errors outside a memory route (those answer for themselves).
    rid = request_id(request.scope)
    log_unexpected(error, rid, "app")
    response = internal_error_response()
    response.headers[REQUEST_ID_HEADER] = rid
    return response
