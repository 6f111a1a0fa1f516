"""The panel's page and its static files: package data, served with an ETag and strict security headers."""

from __future__ import annotations

import hashlib
import html
from importlib import resources

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from adapters_http.errors import json_error

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Revalidate every time; the ETag makes an unchanged file a bodiless 304.
    "Cache-Control": "no-cache",
}
ASSETS_PATH = "/panel/assets"

_MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".html": "text/html; charset=utf-8",
}


@attrs.frozen(kw_only=True)
class PageSettings:
    """What the page needs to know about where it runs."""

    api_base: str = ""
    """Where the memory routes are mounted (`""` for the standalone server, e.g. `/api` in a host)."""
    sign_in: str = "panel"
    """`panel`: the standalone sign-in (link or token); `host`: the host signs people in at `sign_in_url`."""
    sign_in_url: str = ""
    prompt: str = ""
    """The `## Memory Bank` prompt the copy button copies; empty hides the button."""
    identity_provider: str = ""
    """The name on the "Sign in with <name>" button (standalone sign-in only); empty: no such button."""


@attrs.frozen
class _File:
    body: bytes
    media_type: str
    etag: str


def _file(body: bytes, name: str) -> _File:
    suffix = name[name.rfind(".") :]
    return _File(body, _MEDIA_TYPES[suffix], '"' + hashlib.sha256(body).hexdigest()[:32] + '"')


def _static() -> resources.abc.Traversable:
    return resources.files("adapters_http.panel").joinpath("static")


def render_index(settings: PageSettings) -> bytes:
    """index.html with the settings filled in (every value HTML-escaped)."""
    template = _static().joinpath("index.html").read_text(encoding="utf-8")
    values = {
        "api_base": settings.api_base,
        "sign_in": settings.sign_in,
        "sign_in_url": settings.sign_in_url,
        "prompt": settings.prompt,
        "identity_provider": settings.identity_provider,
    }
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", html.escape(value))
    return template.encode("utf-8")


def page_routes(settings: PageSettings) -> list[BaseRoute]:
    """`GET /` (the page) and `GET /panel/assets/{name}` (its CSS, ES modules and icon)."""
    index = _file(render_index(settings), "index.html")
    assets = {
        entry.name: _file(entry.read_bytes(), entry.name)
        for entry in _static().iterdir()
        if entry.is_file() and entry.name != "index.html" and entry.name[entry.name.rfind(".") :] in _MEDIA_TYPES
    }

    async def page(request: Request) -> Response:
        return _serve(request, index)

    async def asset(request: Request) -> Response:
        found = assets.get(request.path_params["name"])
        if found is None:
            return json_error(404, {"error": "not_found", "message": "No such route."})
        return _serve(request, found)

    return [
        Route("/", page, methods=["GET", "HEAD"]),
        Route(ASSETS_PATH + "/{name}", asset, methods=["GET", "HEAD"]),
    ]


def _serve(request: Request, file: _File) -> Response:
    headers = {**SECURITY_HEADERS, "ETag": file.etag}
    if file.etag in {tag.strip() for tag in request.headers.get("if-none-match", "").split(",")}:
        return Response(status_code=304, headers=headers)
    body = b"" if request.method == "HEAD" else file.body
    response = Response(body, media_type=file.media_type, headers=headers)
    if request.method == "HEAD":
        response.headers["Content-Length"] = str(len(file.body))
    return response
