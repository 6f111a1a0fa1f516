"""The panel's CSRF defence: a cookie only counts on a same-origin call that carries the panel's header.

A browser sends a cookie with any request to its site, whoever wrote the page: a form on
another port of the same host counts as the same *site*, so `SameSite=Strict` alone is not
enough. A custom header cannot be set by a form, and a cross-origin `fetch` that sets it needs
a CORS preflight this server never grants. The `Origin` (and `Sec-Fetch-Site`) check refuses
what a browser marks as cross-origin even so.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import Request

from adapters_http.auth import BlockingResolver, PrincipalResolver, awaitable_resolver
from memorybank_core.ports import Principal

PANEL_HEADER = "X-Memorybank-Panel"
"""The header every panel call carries (value `1`); a cross-site form or `fetch` cannot send it."""

_SAFE_METHODS = frozenset({"GET", "HEAD"})


def is_panel_call(request: Request) -> bool:
    """True when `request` is a same-origin call made by the panel's own script."""
    if request.headers.get(PANEL_HEADER) != "1":
        return False
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site != "same-origin":
        return False
    origin = request.headers.get("origin")
    if origin is None:
        # Browsers send Origin on every unsafe request; only same-origin GETs may lack it.
        return request.method in _SAFE_METHODS
    return _host_of(origin) == request.headers.get("host", "").lower()


def panel_calls_only(resolver: PrincipalResolver) -> PrincipalResolver:
    """`resolver`, consulted only for same-origin panel calls: the guard a cookie-based resolver needs.

    A host that authenticates the panel with its own session cookie wraps its resolver in this.

    Raises:
        TypeError: `resolver` is synchronous and not wrapped in `BlockingResolver`.
    """
    resolver = awaitable_resolver(resolver, wrapped_in="panel_calls_only")
    if isinstance(resolver, BlockingResolver):
        check = resolver.resolve_blocking
        return BlockingResolver(lambda request: check(request) if is_panel_call(request) else None)

    async def resolve(request: Request) -> Principal | None:
        if not is_panel_call(request):
            return None
        return await resolver(request)

    return resolve


def _host_of(origin: str) -> str | None:
    try:
        parts = urlsplit(origin)
    except ValueError:
        return None
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        return None  # includes the opaque origin "null"
    return parts.netloc.lower()
