"""The panel session cookie: set it for a started session, read it back as a principal, clear it."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response

from adapters_http.auth import BlockingResolver, PrincipalResolver, awaitable_resolver
from adapters_http.panel.csrf import panel_calls_only
from memorybank_core.panel_sessions import PanelSessions, StartedSession
from memorybank_core.ports import Principal

SESSION_COOKIE = "memorybank_session"


def set_session_cookie(request: Request, response: Response, started: StartedSession) -> None:
    """Put a started session in the browser: HttpOnly, SameSite=Strict, Secure over https, expiring with it.

    Any sign-in route (link, pasted token, a host's OIDC callback) ends with
    `set_session_cookie(request, response, sessions.start(principal))`.
    """
    max_age = max(0, int((started.expires_at - datetime.now(UTC)).total_seconds()))
    response.set_cookie(
        SESSION_COOKIE,
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
        SESSION_COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


def session_cookie_resolver(sessions: PanelSessions) -> PrincipalResolver:
    """The panel's resolver: the session in the cookie, on same-origin panel calls only (see `csrf`)."""

    def resolve(request: Request) -> Principal | None:
        secret = request.cookies.get(SESSION_COOKIE)
        if not secret:
            return None
        return sessions.authenticate(secret)

    return panel_calls_only(BlockingResolver(resolve))


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
