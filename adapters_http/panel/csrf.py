"""The panel's CSRF defence: a cookie only counts on a same-origin call that carries the panel's header.

A browser sends a cookie with any request to its site, whoever wrote the page: a form on
another port of the same host counts as the same *site*, so `SameSite=Strict` alone is not
enough. A custom header cannot be set by a form, and a cross-origin `fetch` that sets it needs
a CORS preflight this server never grants. The `Origin` (and `Sec-Fetch-Site`) check refuses
what a browser marks as cross-origin even so.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

import attrs
from starlette.requests import Request

from adapters_http.auth import BlockingResolver, PrincipalResolver, awaitable_resolver
from memorybank_core.ports import Principal

PANEL_HEADER = "X-Memorybank-Panel"
"""The header every panel call carries (value `1`); a cross-site form or `fetch` cannot send it."""

_SAFE_METHODS = frozenset({"GET", "HEAD"})


@attrs.frozen
class PanelOrigin:
    """Which page origin may call the panel: the server's public URL's, or the request's own on named hosts.

    With a public URL (`memorybank serve --public-url`) only that URL's origin is, whatever `Host` the request
    names: a host name rebound to this server (`Host: evil.example`) cannot make its own page the panel's. Without
    one, the request's own origin (scheme, `Host`) is, when its host is one of `hosts` (a loopback bind: the
    loopback names and `--allowed-host`s, as the MCP rail serves), or any host when `hosts` is None (a host that
    mounts the panel behind its own name checks).
    """

    public: tuple[str, str, int] | None = None
    hosts: frozenset[str] | None = None

    @classmethod
    def of(cls, public_url: str | None, *, hosts: Iterable[str] | None = None) -> PanelOrigin:
        """The policy for a server whose public base URL is `public_url` (None: not configured), serving `hosts`
        (`name`, `name:port` or `name:*`; None: any).

        Raises:
            ValueError: `public_url` is not an http(s) URL.
        """
        if public_url is None:
            names = None if hosts is None else frozenset(_host_name(host) for host in hosts)
            return cls(hosts=names)
        parts = urlsplit(public_url)
        public = _origin_of(f"{parts.scheme}://{parts.netloc}")
        if public is None:
            raise ValueError("the public URL must be an http(s) URL")
        return cls(public=public)

    def allows(self, origin: str, request: Request) -> bool:
        """True when the `Origin` header `origin` names the panel's origin for `request`."""
        theirs = _origin_of(origin)
        if theirs is None:
            return False
        if self.public is not None:
            return theirs == self.public
        own = _origin_of(f"{request.url.scheme}://{request.headers.get('host', '')}")
        return theirs == own and (self.hosts is None or theirs[1] in self.hosts)


#: The names a loopback server answers to without a public URL, as the MCP rail does.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SAME_HOST = PanelOrigin()
"""The request's own origin, whatever its host: for a host that mounts the panel behind its own name checks."""


def _host_name(host: str) -> str:
    """`name` of `name`, `name:port`, `name:*`, `[::1]:port`, lower-cased as `_origin_of` gives it."""
    if host.startswith("["):
        return host[1 : host.index("]")].lower() if "]" in host else host.lower()
    return host.rsplit(":", 1)[0].lower() if host.count(":") == 1 else host.lower()


def is_panel_call(request: Request, origin: PanelOrigin = SAME_HOST) -> bool:
    """True when `request` is a call made by the panel's own script from the panel's origin."""
    if request.headers.get(PANEL_HEADER) != "1":
        return False
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site != "same-origin":
        return False
    header_origin = request.headers.get("origin")
    if header_origin is None:
        # Browsers send Origin on every unsafe request; only same-origin GETs may lack it.
        return request.method in _SAFE_METHODS
    return origin.allows(header_origin, request)


def panel_calls_only(resolver: PrincipalResolver, origin: PanelOrigin = SAME_HOST) -> PrincipalResolver:
    """`resolver`, consulted only for panel calls from `origin`: the guard a cookie-based resolver needs.

    A host that authenticates the panel with its own session cookie wraps its resolver in this. The scheme compared
    is the one the server sees (a trusted proxy's `X-Forwarded-Proto` included), so a page served over plain http
    cannot act on the https site of the same host, nor another port.

    Raises:
        TypeError: `resolver` is synchronous and not wrapped in `BlockingResolver`.
    """
    resolver = awaitable_resolver(resolver, wrapped_in="panel_calls_only")
    if isinstance(resolver, BlockingResolver):
        check = resolver.resolve_blocking
        return BlockingResolver(lambda request: check(request) if is_panel_call(request, origin) else None)

    async def resolve(request: Request) -> Principal | None:
        if not is_panel_call(request, origin):
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
