"""Operational routes: `/healthz` (alive), `/readyz` (the database answers and its schema is ready), `/metrics`.

They are public except `/metrics`, cheap, and not part of the OpenAPI document, so no capability
catalog built from it (the MCP rail) can ever list them.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from adapters_http.auth import bearer_secret

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"

Readiness = Callable[[], str | None]
"""Blocking check of the app's dependencies: None when ready, else a short reason safe to show anyone."""

ReadinessDetails = Callable[[], dict[str, object]]
"""What the server is doing in the background, for `/readyz` to show: counts and states only, never content."""

MetricsExposition = Callable[[], tuple[bytes, str]]
"""The current metrics as (body, content type), e.g. the Prometheus text format."""


def system_routes(
    *,
    readiness: Readiness,
    details: ReadinessDetails | None = None,
    metrics: MetricsExposition | None = None,
    metrics_token: str | None = None,
) -> list[BaseRoute]:
    """`/healthz` and `/readyz`, and `/metrics` when both `metrics` and `metrics_token` are given.

    `details`, when given, adds `"details": {...}` to `/readyz`'s answer (counts, never content):
    work the server does in the background while it serves, such as filling in vectors.

    `/metrics` answers only `Authorization: Bearer <metrics_token>` (401 otherwise): the figures
    are not secret, but they say how busy the server is, which is nobody else's business.
    """

    async def health(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def ready(_request: Request) -> Response:
        reason = await run_in_threadpool(readiness)
        extra = {"details": details()} if details is not None else {}
        if reason is None:
            return JSONResponse({"status": "ready", **extra})
        return JSONResponse({"status": "not_ready", "reason": reason, **extra}, status_code=503)

    routes: list[BaseRoute] = [
        Route(HEALTH_PATH, health, methods=["GET"], include_in_schema=False),
        Route(READY_PATH, ready, methods=["GET"], include_in_schema=False),
    ]
    if metrics is not None and metrics_token:
        expected = metrics_token.encode()

        async def serve_metrics(request: Request) -> Response:
            given = (bearer_secret(request) or "").encode()
            if not hmac.compare_digest(given, expected):
                return JSONResponse(
                    {"error": "unauthorized", "message": "The metrics token is required."},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
            body, content_type = await run_in_threadpool(metrics)
            return Response(body, headers={"Content-Type": content_type})

        routes.append(Route(METRICS_PATH, serve_metrics, methods=["GET"], include_in_schema=False))
    return routes
