"""Errors to responses, in one table. Every error body is `{"error", "message", "details"?}`."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from adapters_http.throttling import rate_limit_headers
from memorybank_core.errors import (
    CredentialsRefusedError,
    ForbiddenError,
    InvalidInputError,
    MemoryDisabledError,
    NotFoundError,
    QuotaExceededError,
    SecretDetectedError,
    UnavailableError,
)
from memorybank_core.rate_limits import RateLimitedError
from memorybank_core.secret_screening import SAVE_A_POINTER

#: Seconds a client should wait before retrying after a 503.
RETRY_AFTER_SECONDS = 1


class HttpFacadeError(Exception):
    """Base of the errors only the HTTP facade raises (the core knows nothing of transports)."""


class UnauthorizedError(HttpFacadeError):
    """No principal: no credentials, or credentials that are unknown, malformed or revoked."""


class BodyTooLargeError(HttpFacadeError):
    """The request body is over the facade's byte cap."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        super().__init__(f"the request body must be at most {max_bytes} bytes")


class UnsupportedMediaTypeError(HttpFacadeError):
    """The request body is not declared as JSON."""


@attrs.frozen
class ErrorSpec:
    """How one kind of error is answered."""

    status: int
    code: str
    message: str
    headers: Mapping[str, str] = attrs.field(factory=dict)


#: THE mapping from error classes to responses; checked in order, so subclasses come first.
ERROR_TABLE: tuple[tuple[type[Exception], ErrorSpec], ...] = (
    # Never the secret: the details name field, kind and character range only.
    (
        SecretDetectedError,
        ErrorSpec(
            422,
            "secret_detected",
            f"The memory holds what looks like a credential, so nothing was saved; see details. {SAVE_A_POINTER}",
        ),
    ),
    (InvalidInputError, ErrorSpec(400, "invalid_request", "The request is invalid; see details.")),
    (
        UnauthorizedError,
        ErrorSpec(401, "unauthorized", "A valid bearer token is required.", {"WWW-Authenticate": "Bearer"}),
    ),
    (
        CredentialsRefusedError,
        ErrorSpec(401, "unauthorized", "The bearer token was refused.", {"WWW-Authenticate": "Bearer"}),
    ),
    (ForbiddenError, ErrorSpec(403, "insufficient_scope", "The token lacks the scope this operation requires.")),
    (
        MemoryDisabledError,
        ErrorSpec(403, "memory_disabled", "Memory is switched off for this account by the operator of this server."),
    ),
    (
        QuotaExceededError,
        ErrorSpec(
            403,
            "quota_exceeded",
            "The storage quota of this account is full; delete old memories to save new ones. See details.",
        ),
    ),
    # Fixed text on purpose: malformed, never-existing and someone else's ids must give byte-identical bodies.
    (NotFoundError, ErrorSpec(404, "memory_not_found", "No memory with this id.")),
    (BodyTooLargeError, ErrorSpec(413, "payload_too_large", "The request body is too large.")),
    (UnsupportedMediaTypeError, ErrorSpec(415, "unsupported_media_type", "Send the body as application/json.")),
    (RateLimitedError, ErrorSpec(429, "rate_limited", "Too many requests; retry after Retry-After seconds.")),
    (
        UnavailableError,
        ErrorSpec(
            503,
            "unavailable",
            "The memory bank is temporarily unavailable; retry shortly.",
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
        ),
    ),
)

_ROUTING_CODES = {404: ("not_found", "No such route."), 405: ("method_not_allowed", "Method not allowed here.")}
INTERNAL_ERROR = ErrorSpec(
    500, "internal_error", "Something went wrong on our side; the request id is in X-Request-Id."
)


def spec_for(error: Exception) -> ErrorSpec | None:
    """The table's entry for `error`, or None when the error is unexpected."""
    for error_class, spec in ERROR_TABLE:
        if isinstance(error, error_class):
            return spec
    return None


def error_response(error: Exception, *, resource_metadata: str | None = None) -> Response | None:
    """The response for an expected error, or None when `error` is unexpected (a bug).

    `resource_metadata` (the URL of this server's RFC 9728 metadata) goes into every bearer challenge,
    so an OAuth client can discover where to get a token.
    """
    spec = spec_for(error)
    if spec is None:
        return None
    body: dict[str, object] = {"error": spec.code, "message": spec.message}
    headers = dict(spec.headers)
    if isinstance(error, SecretDetectedError):
        body["details"] = [
            {"path": p.path, "message": p.message, "kind": p.kind, "start": p.start, "end": p.end}
            for p in error.secrets
        ]
    elif isinstance(error, InvalidInputError):
        body["details"] = [{"path": p.path, "message": p.message} for p in error.problems]
    elif isinstance(error, ForbiddenError):
        body["message"] = f"The token lacks the scope {error.required_scope}, which this operation requires."
        body["required_scope"] = error.required_scope
        headers["WWW-Authenticate"] = bearer_challenge(
            error="insufficient_scope", scope=error.required_scope, resource_metadata=resource_metadata
        )
    elif isinstance(error, CredentialsRefusedError):
        body["message"] = f"The bearer token was refused: {error.reason}."
        headers["WWW-Authenticate"] = bearer_challenge(
            error="invalid_token", error_description=error.reason, resource_metadata=resource_metadata
        )
    elif isinstance(error, UnauthorizedError) and resource_metadata is not None:
        headers["WWW-Authenticate"] = bearer_challenge(resource_metadata=resource_metadata)
    elif isinstance(error, QuotaExceededError):
        # The reference host's details shape ({path, message}), with the numbers beside it.
        body["details"] = [
            {
                "path": name,
                "message": f"{error.used[name]} of {error.limit[name]} used; this save needs {error.requested[name]}",
                "limit": error.limit[name],
                "used": error.used[name],
                "requested": error.requested[name],
            }
            for name in error.exceeded
        ]
    elif isinstance(error, RateLimitedError):
        retry_after = error.state.retry_after()
        body["message"] = (
            f"Too many {error.operation} requests: the limit is {error.rate_limit.describe()}. "
            f"Retry in {retry_after} seconds."
        )
        body["retry_after"] = retry_after
        headers.update(rate_limit_headers(error.state))
        headers["Retry-After"] = str(retry_after)
    elif isinstance(error, BodyTooLargeError):
        body["message"] = f"The request body is over the cap of {error.max_bytes} bytes."
    return json_error(spec.status, body, headers)


def bearer_challenge(**params: str | None) -> str:
    """A `WWW-Authenticate: Bearer` value (RFC 6750 section 3) with the given parameters, None ones left out.

    Values are ours (codes, fixed reasons, configured URLs); quotes and backslashes are escaped anyway.
    """
    parts = [f'{name}="{_quoted(value)}"' for name, value in params.items() if value is not None]
    return "Bearer " + ", ".join(parts) if parts else "Bearer"


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def internal_error_response() -> Response:
    """The generic answer to an unexpected error: nothing about the error itself."""
    return json_error(INTERNAL_ERROR.status, {"error": INTERNAL_ERROR.code, "message": INTERNAL_ERROR.message})


def method_not_allowed(allow: str) -> Response:
    """405 in the error shape, with the `Allow` header listing the path's methods."""
    code, message = _ROUTING_CODES[405]
    return json_error(405, {"error": code, "message": message}, {"Allow": allow})


def json_error(status: int, body: Mapping[str, object], headers: Mapping[str, str] | None = None) -> Response:
    """A JSON error response."""
    return JSONResponse(dict(body), status_code=status, headers=dict(headers or {}))


async def routing_error(_request: Request, error: Exception) -> Response:
    """Starlette exception handler: the router's 404 and 405 (and any other HTTPException) in the error shape."""
    if not isinstance(error, HTTPException):  # registered for HTTPException only; this narrows the type
        raise error
    code, message = _ROUTING_CODES.get(error.status_code, ("http_error", str(error.detail)))
    return json_error(error.status_code, {"error": code, "message": message}, error.headers)
