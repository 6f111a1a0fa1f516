"""The memory bank's REST facade (Starlette) and its OpenAPI document.

A host imports from here: `create_app` for a standalone app, `memory_routes` to mount
the routes under its own authentication, `PrincipalResolver` to plug that
authentication in (a `BlockingResolver` for a synchronous check: it then runs in the same
worker-thread call as the use case), and `MEMORY_ROUTES` / `build_openapi` for the route catalog.
In-process callers (the MCP facade) put an authenticated principal (or a `DeferredPrincipal`, checked
in the route's own worker-thread call) in the ASGI scope under `IN_PROCESS_PRINCIPAL_KEY`, and may hand
a JSON body already decoded under `IN_PROCESS_BODY_KEY`.
"""

from adapters_http.app import create_app, memory_routes
from adapters_http.auth import (
    IN_PROCESS_BODY_KEY,
    IN_PROCESS_PRINCIPAL_KEY,
    Authenticate,
    BlockingResolver,
    CallerRefusedError,
    DeferredPrincipal,
    PrincipalResolver,
    bearer_resolver,
    bearer_secret,
    bearer_token_resolver,
)
from adapters_http.endpoint import ResponseHeadersMiddleware
from adapters_http.errors import (
    ERROR_TABLE,
    RETRY_AFTER_SECONDS,
    SCHEMA_NOT_READY_REASON,
    ErrorSpec,
    bearer_challenge,
    error_response,
    method_not_allowed,
)
from adapters_http.inputs import MAX_BODY_BYTES
from adapters_http.observation import RequestObserver, current_request_id
from adapters_http.openapi import OPENAPI_PATH, build_openapi
from adapters_http.operation_ids import (
    MAX_NAME_LENGTH,
    OperationIdError,
    build_operation_id,
    capability_names,
    structural_shorten,
)
from adapters_http.routes import MEMORY_ROUTES, MEMORY_TAG, Param, RouteSpec, check_route_table
from adapters_http.system import HEALTH_PATH, METRICS_PATH, READY_PATH, MetricsExposition, Readiness, system_routes

__all__ = [
    "ERROR_TABLE",
    "HEALTH_PATH",
    "IN_PROCESS_BODY_KEY",
    "IN_PROCESS_PRINCIPAL_KEY",
    "MAX_BODY_BYTES",
    "MAX_NAME_LENGTH",
    "MEMORY_ROUTES",
    "MEMORY_TAG",
    "METRICS_PATH",
    "OPENAPI_PATH",
    "READY_PATH",
    "RETRY_AFTER_SECONDS",
    "SCHEMA_NOT_READY_REASON",
    "Authenticate",
    "BlockingResolver",
    "CallerRefusedError",
    "DeferredPrincipal",
    "ErrorSpec",
    "MetricsExposition",
    "OperationIdError",
    "Param",
    "PrincipalResolver",
    "Readiness",
    "RequestObserver",
    "ResponseHeadersMiddleware",
    "RouteSpec",
    "bearer_challenge",
    "bearer_resolver",
    "bearer_secret",
    "bearer_token_resolver",
    "build_openapi",
    "build_operation_id",
    "capability_names",
    "check_route_table",
    "create_app",
    "current_request_id",
    "error_response",
    "memory_routes",
    "method_not_allowed",
    "structural_shorten",
    "system_routes",
]
