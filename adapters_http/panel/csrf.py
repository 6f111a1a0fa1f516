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
    return is_same_origin(origin, request)


def is_same_origin(origin: str, request: Request) -> bool:
    """True when the `Origin` header names `request`'s own origin: the same scheme, host and port.

    The scheme is the one the server sees (a trusted proxy's `X-Forwarded-Proto` included), so a page
    served over plain http cannot act on the https site of the same host, nor another port.
    """
    theirs = _origin_of(origin)
    return theirs is not None and theirs == _origin_of(f"{request.url.scheme}://{request.headers.get('host', '')}")


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


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_of(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a serialized origin (RFC 6454); None for anything else, the opaque `null` too."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return None
    if parts.path or parts.query or parts.fragment or url.endswith(("?", "#")):
        return None  # an origin is scheme, host and port only
    return scheme, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS[scheme]
