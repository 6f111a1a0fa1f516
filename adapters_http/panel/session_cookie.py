"""The panel session cookie: set it for a started session, read it back as a principal, clear it."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response

from adapters_http.auth import BlockingResolver, PrincipalResolver, awaitable_resolver
from adapters_http.panel.csrf import SAME_HOST, PanelOrigin, panel_calls_only
from memorybank_core.panel_sessions import PanelSessions, StartedSession
from memorybank_core.ports import Principal

SESSION_COOKIE = "memorybank_session"
SECURE_SESSION_COOKIE = "__Host-memorybank_session"
"""The cookie's name over https: `__Host-` makes browsers refuse one set with a `Domain` or from plain http, so a
sibling subdomain or a network attacker cannot plant a session of their choosing (login CSRF). Over https only
this name is read."""


def session_cookie_name(request: Request) -> str:
    """The session cookie's name for `request`: `__Host-` prefixed over https (a trusted proxy's too)."""
    return SECURE_SESSION_COOKIE if request.url.scheme == "https" else SESSION_COOKIE


def session_secret(request: Request) -> str | None:
    """The session secret the browser sent under this scheme's cookie name, if any."""
    return request.cookies.get(session_cookie_name(request)) or None


def set_session_cookie(request: Request, response: Response, started: StartedSession) -> None:
    """Put a started session in the browser: HttpOnly, SameSite=Strict, expiring with it; `__Host-` and Secure
    over https.

    Any sign-in route (link, pasted token, a host's OIDC callback) ends with
    `set_session_cookie(request, response, sessions.start(principal))`.
    """
    max_age = max(0, int((started.expires_at - datetime.now(UTC)).total_seconds()))
    response.set_cookie(
        session_cookie_name(request),
        started.secret,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def clear_session_cookie(request: Request, response: Response) -> None:
    """Remove the session cookie from the browser."""
    response.delete_cookie(
        session_cookie_name(request), path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


def session_cookie_resolver(sessions: PanelSessions, origin: PanelOrigin = SAME_HOST) -> PrincipalResolver:
    """The panel's resolver: the session in the cookie, on panel calls from `origin` only (see `csrf`)."""

    def resolve(request: Request) -> Principal | None:
        secret = session_secret(request)
        if secret is None:
            return None
        return sessions.authenticate(secret)

    return panel_calls_only(BlockingResolver(resolve), origin)


def bearer_or_session(bearer: PrincipalResolver, session: PrincipalResolver) -> PrincipalResolver:
    """Two separate doors: a request with an `Authorization` header is judged by it alone, others by the cookie.

    Raises:
        TypeError: either resolver is synchronous and not wrapped in `BlockingResolver`.
    """
    bearer = awaitable_resolver(bearer, wrapped_in="bearer_or_session")
    session = awaitable_resolver(session, wrapped_in="bearer_or_session")
    if isinstance(bearer, BlockingResolver) and isinstance(session, BlockingResolver):
        by_header, by_cookie = bearer.resolve_blocking, session.resolve_blocking
        return BlockingResolver(
            lambda request: by_header(request) if "authorization" in request.headers else by_cookie(request)
        )

    async def resolve(request: Request) -> Principal | None:
        if "authorization" in request.headers:
            return await bearer(request)
        return await session(request)

    return resolve
