"""The OpenAPI 3.1 document, generated from the route table.

The MCP facade builds its capability catalog from this document (operationId,
summary, tags, parameters, body schema), so it must describe exactly what runs.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adapters_http.endpoint import REQUEST_ID_HEADER
from adapters_http.errors import ERROR_TABLE, RETRY_AFTER_SECONDS, Surface
from adapters_http.routes import ACCOUNT_TAG, MEMORY_ROUTES, MEMORY_TAG, Param, RouteSpec, check_route_table
from adapters_http.schemas import COMPONENTS, JsonSchema, ref
from memorybank_core.configuration import BankSettings

OPENAPI_PATH = "/openapi.json"
"""Where the standalone app serves the document (public: no token needed)."""

API_VERSION = "v1"
BEARER_SCHEME = "bearerAuth"

_SUCCESS_TEXT = {200: "OK", 201: "Created", 204: "Deleted; the body is empty."}
_ERROR_TEXT: dict[int, str] = {}
for _spec in (spec for _, spec in ERROR_TABLE if spec.surface is Surface.API):
    # Several codes share a status (403: insufficient_scope, memory_disabled, quota_exceeded): list them all.
    _known = _ERROR_TEXT.get(_spec.status)
    if _known is None or f"`{_spec.code}`" not in _known:
        _line = f"`{_spec.code}`: {_spec.message}"
        _ERROR_TEXT[_spec.status] = f"{_known} {_line}" if _known else _line


def _header(description: str, schema: JsonSchema) -> JsonSchema:
    return {"description": description, "required": True, "schema": schema}


_DIGITS: JsonSchema = {"type": "string", "pattern": "^[0-9]+$"}
_ETAG = _header(
    'The memory\'s revision as a strong entity tag (`"3"`): send it back in `If-Match` to change that version only.',
    {"type": "string", "pattern": '^"[0-9]+"$'},
)
_REQUEST_ID = _header("An id for this request, as logged by the server.", {"type": "string", "minLength": 1})
_ERROR_HEADERS: dict[int, dict[str, JsonSchema]] = {
    401: {"WWW-Authenticate": _header("Always `Bearer ...`.", {"type": "string", "pattern": "^Bearer"})},
    403: {
        "WWW-Authenticate": {
            "description": '`Bearer error="insufficient_scope", scope=...`, on `insufficient_scope` only.',
            "required": False,
            "schema": {"type": "string"},
        }
    },
    429: {
        "Retry-After": _header(
            "Whole seconds until the request can succeed.", {"type": "string", "pattern": "^[0-9]+$"}
        ),
        "RateLimit-Limit": _header("The limit that was reached (requests per window).", _DIGITS),
        "RateLimit-Remaining": _header("0.", _DIGITS),
        "RateLimit-Reset": _header("Seconds until a request slot frees up.", _DIGITS),
        "RateLimit-Policy": _header(
            "`<limit>;w=<window seconds>` (draft-ietf-httpapi-ratelimit-headers-06).", {"type": "string"}
        ),
    },
    412: {
        "ETag": {
            "description": "The memory's current revision, on `revision_conflict`.",
            "required": False,
            "schema": {"type": "string", "pattern": '^"[0-9]+"$'},
        }
    },
    503: {
        "Retry-After": _header(
            f"Seconds to wait before retrying ({RETRY_AFTER_SECONDS}).", {"type": "string", "pattern": "^[0-9]+$"}
        )
    },
}


def _parameter(param: Param, location: str, defaults: Mapping[str, object]) -> JsonSchema:
    schema = copy.deepcopy(param.schema)
    if param.name in defaults:
        schema["default"] = defaults[param.name]
    return {
        "name": param.name,
        "in": location,
        "required": param.required,
        "description": _with_defaults(param.description, defaults),
        "schema": schema,
    }


def _defaults(route: RouteSpec, settings: BankSettings) -> dict[str, object]:
    """Each parameter's default as this bank applies it: the operator's setting where one sets it."""
    return {
        param.name: getattr(settings, param.configured_default) if param.configured_default else param.schema["default"]
        for param in (*route.path_params, *route.query_params)
        if "default" in param.schema
    }


def _with_defaults(text: str, defaults: Mapping[str, object]) -> str:
    for name, value in defaults.items():
        text = text.replace(f"{{{name}.default}}", str(value))
    return text


def _json_content(schema: JsonSchema) -> JsonSchema:
    return {"application/json": {"schema": copy.deepcopy(schema)}}


def _operation(route: RouteSpec, settings: BankSettings) -> JsonSchema:
    defaults = _defaults(route, settings)
    responses: dict[str, JsonSchema] = {}
    success: JsonSchema = {
        "description": _SUCCESS_TEXT.get(route.success_status, "Success"),
        "headers": {REQUEST_ID_HEADER: _REQUEST_ID, **({"ETag": _ETAG} if route.etag else {})},
    }
    if route.success_schema is not None:
        success["content"] = {route.success_media_type: {"schema": copy.deepcopy(route.success_schema)}}
    responses[str(route.success_status)] = success
    for status in route.error_statuses:
        responses[str(status)] = {
            "description": _ERROR_TEXT[status],
            "headers": {REQUEST_ID_HEADER: _REQUEST_ID, **_ERROR_HEADERS.get(status, {})},
            "content": _json_content(ref("Error")),
        }
    operation: JsonSchema = {
        "operationId": route.operation_id,
        "summary": _with_defaults(route.summary, defaults),
        "description": route.description,
        "tags": list(route.tags),
        "security": [{BEARER_SCHEME: [route.required_scope]}],
        "parameters": [_parameter(p, "path", defaults) for p in route.path_params]
        + [_parameter(p, "query", defaults) for p in route.query_params]
        + [_parameter(p, "header", defaults) for p in route.header_params],
        "responses": responses,
    }
    if route.body_schema is not None:
        operation["requestBody"] = {"required": True, "content": _json_content(route.body_schema)}
    return operation


def build_openapi(
    routes: Sequence[RouteSpec] = MEMORY_ROUTES,
    *,
    title: str = "memorybank",
    server_url: str | None = None,
    settings: BankSettings | None = None,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `routes`; a fresh copy each call, safe to modify.

    `server_url` is the prefix the routes are mounted under, when a host mounts them below its root.
    `settings` is the bank's (`MemoryBank.settings`): defaults an operator configures are shown as configured.

    Raises:
        OperationIdError: the table yields a duplicate, over-long or colliding name.
    """
    check_route_table(routes)
    paths: dict[str, dict[str, JsonSchema]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, settings or BankSettings())
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": API_VERSION,
            "description": (
                "A per-user memory bank for AI agents: save human-verified memories, search, list, edit (with "
                "their history) and delete them. Every call acts on the caller's own memories only."
            ),
        },
        "tags": [
            {"name": MEMORY_TAG, "description": "The caller's own memory bank."},
            {"name": ACCOUNT_TAG, "description": "The person's own account: use, export, delete all."},
        ],
        "paths": paths,
        "components": {
            "schemas": copy.deepcopy(COMPONENTS),
            "securitySchemes": {
                BEARER_SCHEME: {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token from `memorybank token create` (or the host's own credentials).",
                }
            },
        },
    }
    if server_url is not None:
        document["servers"] = [{"url": server_url}]
    return document


def openapi_route(document: dict[str, Any], *, path: str = OPENAPI_PATH) -> Route:
    """A public route serving `document`."""
    # Serialized once: the document never changes while the app runs.
    body = JSONResponse(document).body

    async def serve(_request: Request) -> Response:
        return Response(body, media_type="application/json")

    return Route(path, serve, methods=["GET"], include_in_schema=False)
