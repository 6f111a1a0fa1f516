"""The panel's "Sign in with <provider>": an `IdentityProviderSignIn` (OpenID Connect) ending in a panel session.

`POST /panel/oidc/start`, the sign-in page's button (same-origin only), begins a sign-in: the provider's
secrets for this browser (state, nonce, PKCE verifier) go into a short-lived HttpOnly cookie, and the
browser is sent to the provider. `GET /panel/oidc/callback` is where the provider sends it back: the cookie
is cleared whatever happens (a pending sign-in is used once), the answer is checked against it, and a
session starts as for every other sign-in method (`PanelSessions.start` + `set_session_cookie`); then the
browser goes to the panel. Every failure is a page saying what happened, never a traceback.

Nothing is kept in the server between the two requests, so any worker may answer the callback. There is
no return-to parameter: the callback always lands on the panel, and the redirect URI comes from the
server's configured public URL, never from the request's Host header.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Awaitable, Callable

import attrs
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from adapters_http.endpoint import log_unexpected, request_id, tag_response
from adapters_http.panel.csrf import SAME_HOST, PanelOrigin
from adapters_http.panel.page import ASSETS_PATH, SECURITY_HEADERS
from adapters_http.panel.session_cookie import session_secret, set_session_cookie
from memorybank_core.errors import CredentialsRefusedError, SignInDeclinedError, UnavailableError
from memorybank_core.panel_sessions import PanelSessions
from memorybank_core.ports import IdentityProviderSignIn

logger = logging.getLogger("memorybank.panel")

START_PATH = "/panel/oidc/start"
CALLBACK_PATH = "/panel/oidc/callback"
PENDING_COOKIE = "memorybank_oidc"
SECURE_PENDING_COOKIE = "__Host-memorybank_oidc"
"""Over https the cookie is `__Host-` prefixed: no sibling subdomain can plant a pending sign-in of its own."""
PENDING_TTL_SECONDS = 600
"""How long a person may take at the provider (log in, consent) before the pending sign-in expires."""
_ANSWER_PARAMETERS = ("state", "code", "iss", "error")
_NO_STORE = {"Cache-Control": "no-store"}


@attrs.frozen(kw_only=True)
class PanelIdentityProvider:
    """An identity provider the standalone panel offers ("Sign in with <name>"), and where it sends people back."""

    sign_in: IdentityProviderSignIn
    callback_url: str
    """The redirect URI registered at the provider: the server's public URL + `CALLBACK_PATH`."""

    @property
    def name(self) -> str:
        """The provider's name on the button."""
        return self.sign_in.display_name


@attrs.frozen
class _Problem:
    status: int
    title: str
    text: str


def oidc_routes(
    sessions: PanelSessions, provider: PanelIdentityProvider, origin: PanelOrigin = SAME_HOST
) -> list[BaseRoute]:
    """`POST /panel/oidc/start` and `GET /panel/oidc/callback`."""
    handlers = _OidcHandlers(sessions, provider, origin)
    return [
        Route(START_PATH, _answered(handlers.start, provider.name), methods=["POST"]),
        Route(CALLBACK_PATH, _answered(handlers.callback, provider.name), methods=["GET"]),
    ]


class _OidcHandlers:
    def __init__(self, sessions: PanelSessions, provider: PanelIdentityProvider, origin: PanelOrigin) -> None:
        self._sessions = sessions
        self._provider = provider
        self._origin = origin

    async def start(self, request: Request) -> Response:
        name = self._provider.name
        if not _started_on_this_site(request, self._origin):
            logger.info("panel.oidc_refused reason=cross_site_start")
            return _page(
                request,
                _Problem(
                    403,
                    "This sign-in did not start on the memory bank's page",
                    f"Open the memory bank and choose 'Sign in with {name}' there.",
                ),
            )
        try:
            redirect = await run_in_threadpool(self._provider.sign_in.begin, redirect_uri=self._provider.callback_url)
        except UnavailableError:
            return _page(request, _unreachable(name))
        response = RedirectResponse(redirect.url, status_code=303, headers=_NO_STORE)
        secure = request.url.scheme == "https"
        response.set_cookie(
            _pending_cookie(request),
            redirect.pending,
            max_age=PENDING_TTL_SECONDS,
            path="/",
            httponly=True,
            # Lax, not Strict: the provider sends the browser back with a cross-site top-level GET.
            samesite="lax",
            secure=secure,
        )
        return response

    async def callback(self, request: Request) -> Response:
        response = await self._finish(request)
        # Used once: whatever the outcome, this browser's pending sign-in is gone.
        response.delete_cookie(
            _pending_cookie(request),
            path="/",
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
        return response

    async def _finish(self, request: Request) -> Response:
        name = self._provider.name
        pending = request.cookies.get(_pending_cookie(request))
        if not pending:
            logger.info("panel.oidc_refused reason=no_pending_sign_in")
            return _page(
                request,
                _Problem(
                    400,
                    "This sign-in can't be completed",
                    "It was started more than 10 minutes ago, in another browser or tab, or it has already been "
                    "used. Start again from the sign-in page.",
                ),
            )
        answer: dict[str, str] = {}
        for parameter in _ANSWER_PARAMETERS:
            values = request.query_params.getlist(parameter)
            if len(values) > 1:  # RFC 6749 section 3.1: a parameter must not appear twice
                return _page(request, _refused(name, "the answer repeats a parameter"))
            if values:
                answer[parameter] = values[0]
        try:
            person = await run_in_threadpool(
                self._provider.sign_in.complete,
                pending=pending,
                redirect_uri=self._provider.callback_url,
                response=answer,
            )
        except SignInDeclinedError as declined:
            logger.info("panel.oidc_refused reason=provider_error code=%s", declined.code)
            return _page(request, _declined(name, declined.code))
        except CredentialsRefusedError as refused:
            logger.info("panel.oidc_refused reason=%s", refused.reason)
            return _page(request, _refused(name, refused.reason))
        except UnavailableError:
            return _page(request, _unreachable(name))
        try:
            started = await run_in_threadpool(self._sessions.start, person)
            previous = session_secret(request)
            if previous:
                await run_in_threadpool(self._sessions.end, previous)
        except UnavailableError:
            return _page(
                request,
                _Problem(503, "The memory bank can't sign you in right now", "Its storage is unavailable. Try again."),
            )
        logger.info("panel.oidc_signed_in user=%s", started.principal.user_id)
        response = RedirectResponse(_panel_url(request), status_code=303, headers=_NO_STORE)
        set_session_cookie(request, response, started)
        return response


def _started_on_this_site(request: Request, panel_origin: PanelOrigin) -> bool:
    """The start form was posted by the panel's own page (browsers mark where a form post comes from)."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site != "same-origin":
        return False
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        # A no-referrer page may post with `Origin: null`; Sec-Fetch-Site above still judged it when sent.
        return fetch_site is not None
    return panel_origin.allows(origin, request)


def _pending_cookie(request: Request) -> str:
    return SECURE_PENDING_COOKIE if request.url.scheme == "https" else PENDING_COOKIE


def _panel_url(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/") + "/"


def _declined(name: str, code: str) -> _Problem:
    if code == "access_denied":
        return _Problem(
            403,
            "Sign-in was cancelled",
            f"{name} did not sign you in: you cancelled, or you may not use this memory bank. Nothing was changed.",
        )
    return _Problem(
        502,
        f"{name} could not sign you in",
        f"It answered with the error '{code}'. Try again; if it keeps happening, tell whoever runs this memory bank.",
    )


def _refused(name: str, reason: str) -> _Problem:
    return _Problem(
        401,
        "Sign-in refused",
        f"The answer from {name} could not be accepted: {reason}. Nothing was changed; start again from the "
        "sign-in page.",
    )


def _unreachable(name: str) -> _Problem:
    return _Problem(503, f"{name} can't be reached", f"The memory bank could not reach {name}. Try again in a moment.")


def _page(request: Request, problem: _Problem) -> Response:
    """A small page in the panel's style saying what went wrong, with the way back to the sign-in page."""
    root = html.escape(_panel_url(request))
    title = html.escape(problem.title)
    body = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="color-scheme" content="light dark">
  <title>{title} · Memory bank</title>
  <link rel="icon" href="{root}{ASSETS_PATH.lstrip("/")}/icon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="{root}{ASSETS_PATH.lstrip("/")}/panel.css">
</head>
<body>
  <main id="main">
    <section class="sign-in" aria-labelledby="problem-title">
      <div class="sign-in-card">
        <h1 id="problem-title">{title}</h1>
        <p class="notice notice-problem">{html.escape(problem.text)}</p>
        <p class="sign-in-option"><a class="button primary" href="{root}">Back to the sign-in page</a></p>
      </div>
    </section>
  </main>
</body>
</html>
"""
    return HTMLResponse(body, status_code=problem.status, headers={**SECURITY_HEADERS, **_NO_STORE})


def _answered(handler: Callable[[Request], Awaitable[Response]], name: str) -> Callable[[Request], Awaitable[Response]]:
    """`handler` with a request id, and a page (never a traceback) for anything unexpected."""

    async def endpoint(request: Request) -> Response:
        rid = request_id(request.scope)
        try:
            response = await handler(request)
        except Exception as error:
            log_unexpected(error, rid, "panel.oidc")
            response = _page(
                request,
                _Problem(500, f"Signing in with {name} failed", "Something went wrong on the server. Try again."),
            )
        tag_response(response, rid)
        return response

    return endpoint
