"""The management panel: a web page where a person sees, pages through and deletes their own memories.

Plain HTML, CSS and ES modules shipped as package data (no build step), calling only the
public REST routes. `panel_routes` gives a host the page (and, standalone, the sign-in
routes); `session_cookie_resolver` + `bearer_or_session` are how the standalone server lets
the panel's cookie in beside bearer tokens; `panel_calls_only` is the CSRF guard a host
wraps around its own cookie-based resolver; `set_session_cookie(request, response,
sessions.start(principal))` is how any sign-in method (link, token, OIDC) opens a session.
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from adapters_http.panel.csrf import (
    LOOPBACK_NAMES,
    PANEL_HEADER,
    SAME_HOST,
    PanelOrigin,
    is_panel_call,
    panel_calls_only,
)
from adapters_http.panel.oidc import CALLBACK_PATH as OIDC_CALLBACK_PATH
from adapters_http.panel.oidc import PanelIdentityProvider
from adapters_http.panel.page import CONTENT_SECURITY_POLICY, SECURITY_HEADERS, PageSettings, page_routes
from adapters_http.panel.session_cookie import (
    SECURE_SESSION_COOKIE,
    SESSION_COOKIE,
    bearer_or_session,
    clear_session_cookie,
    session_cookie_resolver,
    set_session_cookie,
)
from adapters_http.panel.sign_in import SESSION_PATH, PanelSignIn, TokenAuthenticator, sign_in_routes


def panel_routes(
    *,
    api_base: str = "",
    sign_in: PanelSignIn | None = None,
    sign_in_url: str = "",
    prompt: str = "",
) -> list[BaseRoute]:
    """The panel's routes: the page at `/`, its assets, and the sign-in routes when `sign_in` is given.

    Standalone, pass `sign_in` (link and token sign-in, and "Sign in with <provider>" when it names
    one). A host that signs people in itself passes no `sign_in` and its own `sign_in_url` (where the
    page sends a signed-out person), mounts these routes where it likes, and the memory routes at `api_base`.
    """
    provider = sign_in.identity_provider if sign_in is not None else None
    settings = PageSettings(
        api_base=api_base.rstrip("/"),
        sign_in="panel" if sign_in is not None else "host",
        sign_in_url=sign_in_url,
        prompt=prompt,
        identity_provider=provider.name if provider is not None else "",
    )
    routes = page_routes(settings)
    if sign_in is not None:
        routes += sign_in_routes(sign_in)
    return routes


__all__ = [
    "CONTENT_SECURITY_POLICY",
    "LOOPBACK_NAMES",
    "OIDC_CALLBACK_PATH",
    "PANEL_HEADER",
    "SAME_HOST",
    "SECURE_SESSION_COOKIE",
    "SECURITY_HEADERS",
    "SESSION_COOKIE",
    "SESSION_PATH",
    "PageSettings",
    "PanelIdentityProvider",
    "PanelOrigin",
    "PanelSignIn",
    "TokenAuthenticator",
    "bearer_or_session",
    "clear_session_cookie",
    "is_panel_call",
    "panel_calls_only",
    "panel_routes",
    "session_cookie_resolver",
    "set_session_cookie",
]
