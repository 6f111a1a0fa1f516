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
from starlette.types import Lifespan, Receive, Scope, Send

from adapters_http.auth import PrincipalResolver
from adapters_http.endpoint import (
    Endpoint,
    ResponseHeadersMiddleware,
    authenticated_endpoint,
    log_unexpected,
    request_id,
    tag_response,
)
from adapters_http.errors import internal_error_response, method_not_allowed, routing_error
from adapters_http.handlers import MemoryHandlers
from adapters_http.inputs import MAX_BODY_BYTES
from adapters_http.observation import RequestObserver
from adapters_http.openapi import build_openapi, openapi_route
from adapters_http.routes import MEMORY_ROUTES, RouteSpec, check_route_table
from memorybank_core.rate_limits import RateLimits
from memorybank_core.use_cases import MemoryBank


def memory_routes(
    bank: MemoryBank,
    resolve_principal: PrincipalResolver,
    *,
    routes: Sequence[RouteSpec] = MEMORY_ROUTES,
    max_body_bytes: int = MAX_BODY_BYTES,
    resource_metadata_url: str | None = None,
    observer: RequestObserver | None = None,
    rate_limits: RateLimits | None = None,
) -> list[BaseRoute]:
    """The memory routes as Starlette routes, for a host to put in its own app (directly or in a `Mount`).

    Each route resolves its caller with `resolve_principal` (or takes the in-process
    principal from the ASGI scope), maps errors to the documented responses and logs
    an access event, whatever app it is mounted in. `resource_metadata_url` (an OAuth resource server's
    RFC 9728 metadata) is named in every 401 and 403 bearer challenge. `observer` (metrics) is told
    of each request. `rate_limits` (None: no limits) is checked on every route once the caller is
    known; the MCP rail and the panel call these same routes, so one check covers all three.

    Raises:
        OperationIdError: the route table yields a duplicate, over-long or colliding name.
        TypeError: `resolve_principal` is a synchronous function: wrap it in `BlockingResolver`.
    """
    check_route_table(routes)
    handlers = MemoryHandlers(bank)
    by_path: dict[str, dict[str, Endpoint]] = {}
    for spec in routes:
        endpoint = authenticated_endpoint(
            partial(spec.handler, handlers),
            resolve_principal,
            operation_id=spec.operation_id,
            operation=spec.operation,
            unit_of_work=bank.unit_of_work,
            takes_body=spec.body_schema is not None,
            max_body_bytes=max_body_bytes,
            resource_metadata=resource_metadata_url,
            observer=observer,
            rate_limits=rate_limits,
        )
        by_path.setdefault(spec.starlette_path, {})[spec.method.upper()] = endpoint
    # One route per path taking every method: a path's wrong methods get our JSON 405 (in a host's app too),
    # and a literal path is never shadowed by a template (DELETE /v1/memory/search is a 405, not a delete).
    return [Route(path, _PathEndpoint(endpoints)) for path, endpoints in by_path.items()]


class _PathEndpoint:
    """The ASGI app of one path: dispatches on the method, answers the others with our JSON 405.

    A class, not a function: Starlette gives an ASGI class every method, a function only GET.
    """

    def __init__(self, endpoints: Mapping[str, Endpoint]) -> None:
        self._endpoints = dict(endpoints)
        allowed = set(endpoints) | ({"HEAD"} if "GET" in endpoints else set())
        self._allow = ", ".join(sorted(allowed))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request."""
        request = Request(scope, receive, send)
        method = "GET" if request.method == "HEAD" and "GET" in self._endpoints else request.method
        endpoint = self._endpoints.get(method)
        if endpoint is not None:
            response = await endpoint(request)
        else:
            response = tag_response(method_not_allowed(self._allow), request_id(scope))
        await response(scope, receive, send)


def create_app(
    bank: MemoryBank,
    resolve_principal: PrincipalResolver,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    lifespan: Lifespan[Starlette] | None = None,
    title: str = "memorybank",
    resource_metadata_url: str | None = None,
    panel: Sequence[BaseRoute] = (),
    observer: RequestObserver | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    rate_limits: RateLimits | None = None,
) -> Starlette:
    """The standalone HTTP app: the memory routes, a public `GET /openapi.json`, JSON 404/405/500 bodies.

    Every response carries an `X-Request-Id`. `lifespan` is the composition root's
    (e.g. to close storage on shutdown). `resource_metadata_url`: see `memory_routes`.
    `panel` is the management panel's routes (`adapters_http.panel.panel_routes`), served beside the API.
    `observer` is told of each memory request; `extra_routes` are served too (e.g. `system_routes`).
    `rate_limits`: see `memory_routes`.
    """
    routes: list[BaseRoute] = [
        *memory_routes(
            bank,
            resolve_principal,
            max_body_bytes=max_body_bytes,
            resource_metadata_url=resource_metadata_url,
            observer=observer,
            rate_limits=rate_limits,
        ),
        openapi_route(build_openapi(MEMORY_ROUTES, title=title, settings=bank.settings)),
        *extra_routes,
        *panel,
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(ResponseHeadersMiddleware)],
        exception_handlers={HTTPException: routing_error, Exception: _unexpected_error},
        lifespan=lifespan,
    )


async def _unexpected_error(request: Request, error: Exception) -> Response:
    # Reached only for errors outside a memory route (those answer for themselves).
    rid = request_id(request.scope)
    log_unexpected(error, rid, "app")
    return tag_response(internal_error_response(), rid)
