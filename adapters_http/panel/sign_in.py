"""The standalone panel's sign-in routes under `/panel/session`: who am I, sign in (link or token), sign out.

Every way in ends in `PanelSessions.start` (through `redeem_link` for a link) and
`set_session_cookie`: an identity provider's sign-in (`adapters_http.panel.oidc`) and a host's own too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import attrs
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from adapters_http.endpoint import log_unexpected, request_id, tag_response
from adapters_http.errors import error_response, internal_error_response
from adapters_http.inputs import is_json_media_type
from adapters_http.panel.csrf import SAME_HOST, PanelOrigin, is_panel_call
from adapters_http.panel.oidc import PanelIdentityProvider, oidc_routes
from adapters_http.panel.session_cookie import (
    clear_session_cookie,
    session_cookie_resolver,
    session_secret,
    set_session_cookie,
)
from adapters_http.refusals import (
    BadSignInError,
    CrossSiteRefusedError,
    LinkRejectedError,
    SignedOutError,
    TokenRejectedError,
)
from memorybank_core.bodies import decode_json
from memorybank_core.panel_sessions import PanelSessions, StartedSession
from memorybank_core.ports import Principal

SESSION_PATH = "/panel/session"
#: A sign-in body holds one secret of at most 128 characters; anything bigger is not one.
_MAX_SIGN_IN_BYTES = 1024

TokenAuthenticator = Callable[[str], Principal | None]
"""Checks a pasted API token: its principal, or None for an unknown or revoked one (may block: run in a thread)."""

_NO_STORE = {"Cache-Control": "no-store"}


@attrs.frozen(kw_only=True)
class PanelSignIn:
    """What the standalone panel signs people in with: its sessions, and optionally API tokens to exchange."""

    sessions: PanelSessions
    authenticate_token: TokenAuthenticator | None = None
    identity_provider: PanelIdentityProvider | None = None
    """Offer "Sign in with <provider>" (OpenID Connect) too; see `adapters_http.panel.oidc`."""
    origin: PanelOrigin = SAME_HOST
    """Which page origin may sign in (see `PanelOrigin`); `memorybank serve` sets its public URL's."""


def sign_in_routes(sign_in: PanelSignIn) -> list[BaseRoute]:
    """`GET`, `POST` and `DELETE /panel/session`, and the identity provider's routes when there is one."""
    handlers = _SignInHandlers(sign_in)
    routes: list[BaseRoute] = [
        Route(SESSION_PATH, _answered(handlers.who), methods=["GET"]),
        Route(SESSION_PATH, _answered(handlers.sign_in), methods=["POST"]),
        Route(SESSION_PATH, _answered(handlers.sign_out), methods=["DELETE"]),
    ]
    if sign_in.identity_provider is not None:
        routes += oidc_routes(sign_in.sessions, sign_in.identity_provider, sign_in.origin)
    return routes


class _SignInHandlers:
    def __init__(self, sign_in: PanelSignIn) -> None:
        self._sessions = sign_in.sessions
        self._authenticate_token = sign_in.authenticate_token
        self._origin = sign_in.origin
        self._resolve = session_cookie_resolver(sign_in.sessions, sign_in.origin)

    async def who(self, request: Request) -> Response:
        principal = await self._resolve(request)
        if principal is None:
            raise SignedOutError
        return _principal_response(principal)

    async def sign_in(self, request: Request) -> Response:
        if not is_panel_call(request, self._origin):
            raise CrossSiteRefusedError
        secrets = await _sign_in_body(request)
        if secrets is None:
            raise BadSignInError
        started: StartedSession | None
        if "link" in secrets:
            started = await run_in_threadpool(self._sessions.redeem_link, secrets["link"])
            if started is None:
                raise LinkRejectedError
        else:
            principal = None
            if self._authenticate_token is not None:
                principal = await run_in_threadpool(self._authenticate_token, secrets["token"])
            if principal is None:
                raise TokenRejectedError
            started = await run_in_threadpool(self._sessions.start, principal)
        previous = session_secret(request)
        if previous:
            await run_in_threadpool(self._sessions.end, previous)
        response = _principal_response(started.principal)
        set_session_cookie(request, response, started)
        return response

    async def sign_out(self, request: Request) -> Response:
        if not is_panel_call(request, self._origin):
            raise CrossSiteRefusedError
        secret = session_secret(request)
        if secret:
            await run_in_threadpool(self._sessions.end, secret)
        response = Response(status_code=204, headers=_NO_STORE)
        clear_session_cookie(request, response)
        return response


async def _sign_in_body(request: Request) -> Mapping[str, str] | None:
    """`{"link": ...}` or `{"token": ...}` with one short string, else None."""
    if not is_json_media_type(request.headers.get("content-type")):
        return None
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > _MAX_SIGN_IN_BYTES:
            return None
    try:
        body = decode_json(raw)
    except ValueError:
        return None
    if not isinstance(body, dict) or len(body) != 1:
        return None
    ((key, value),) = body.items()
    if key not in {"link", "token"} or not isinstance(value, str) or not value.strip():
        return None
    return {key: value.strip()}


def _principal_response(principal: Principal) -> Response:
    body = {"user_id": principal.user_id, "scopes": sorted(principal.scopes)}
    return JSONResponse(body, headers=_NO_STORE)


def _answered(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """`handler` with the facades' error answers (ERROR_TABLE: refusals, 503 when the session store is down), never a
    traceback."""

    async def endpoint(request: Request) -> Response:
        rid = request_id(request.scope)
        try:
            response = await handler(request)
        except Exception as error:
            refused = error_response(error)
            if refused is None:
                log_unexpected(error, rid, "panel.session")
                refused = internal_error_response()
            response = refused
            response.headers.update(_NO_STORE)
        tag_response(response, rid)
        return response

    return endpoint
