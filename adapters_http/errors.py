"""Errors to responses, in one table shared by every facade: the REST routes, the MCP rail's gate and the panel.

Every error body is `{"error", "message", "details"?}`. A new kind of error is one row in
`ERROR_TABLE`: its class, status, code and fixed message, the headers every answer carries, and,
only when the answer depends on the error's own fields, a `refine` function. An error is answered by
the row of its nearest class in its MRO; an error without a row is a bug (logged, answered 500).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from adapters_http.refusals import (
    BadSignInError,
    CrossSiteRefusedError,
    LinkRejectedError,
    RailScopeMissingError,
    RailTokenMissingError,
    RailTokenRefusedError,
    SignedOutError,
    TokenRejectedError,
    UnauthorizedError,
)
from adapters_http.throttling import rate_limit_headers
from memorybank_core.bodies import BodyTooLargeError, UnsupportedMediaTypeError
from memorybank_core.conflicts import RevisionConflictError
from memorybank_core.errors import (
    CredentialsRefusedError,
    ForbiddenError,
    InvalidInputError,
    MemoryDisabledError,
    NotAuthorError,
    NotFoundError,
    QuotaExceededError,
    SchemaUnavailableError,
    ScreenBudgetExceededError,
    SecretDetectedError,
    UnavailableError,
)
from memorybank_core.rate_limits import RateLimitedError
from memorybank_core.secret_screening import SAVE_A_POINTER, save_a_pointer
from memorybank_core.wire import etag, memory_json

#: Seconds a client should wait before retrying after a 503.
RETRY_AFTER_SECONDS = 1

#: Why the database cannot serve when its schema is gone: `/readyz` and every 503 for it say the same.
SCHEMA_NOT_READY_REASON = "the database schema is not ready: run `memorybank migrate`"


@attrs.frozen
class Refinement:
    """What an error's own fields add to its row's answer: body fields (a new `message` too) and headers."""

    body: Mapping[str, object] = attrs.field(factory=dict)
    headers: Mapping[str, str] = attrs.field(factory=dict)


Refine = Callable[[Any, "str | None"], Refinement]
"""`(error, resource_metadata) -> Refinement`; `resource_metadata` is the URL of the server's RFC 9728 metadata."""


class Surface(enum.Enum):
    """Which routes answer with a row: the memory routes (listed in the OpenAPI document), the rail, the panel."""

    API = "api"
    RAIL = "rail"
    PANEL = "panel"


@attrs.frozen
class ErrorSpec:
    """How one kind of error is answered."""

    status: int
    code: str
    message: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    refine: Refine | None = attrs.field(default=None, eq=False, repr=False)
    surface: Surface = Surface.API


def _problems(error: InvalidInputError, _metadata: str | None) -> Refinement:
    return Refinement(body={"details": [{"path": p.path, "message": p.message} for p in error.problems]})


_SECRET_REFUSED = "The memory holds what looks like a credential, so nothing was saved; see details."  # noqa: S105


def _secrets(error: SecretDetectedError, _metadata: str | None) -> Refinement:
    details = [
        {"path": p.path, "message": p.message, "kind": p.kind, "start": p.start, "end": p.end} for p in error.secrets
    ]
    # The advice's example names what was found, not always the same kind of key.
    advice = save_a_pointer([problem.kind for problem in error.secrets])
    return Refinement(body={"details": details, "message": f"{_SECRET_REFUSED} {advice}"})


def _missing_scope(error: ForbiddenError, metadata: str | None) -> Refinement:
    scope = error.required_scope
    challenge = bearer_challenge(error="insufficient_scope", scope=scope, resource_metadata=metadata)
    return Refinement(
        body={"message": f"The token lacks the scope {scope}, which this operation requires.", "required_scope": scope},
        headers={"WWW-Authenticate": challenge},
    )


def _refused(error: CredentialsRefusedError, metadata: str | None) -> Refinement:
    challenge = bearer_challenge(error="invalid_token", error_description=error.reason, resource_metadata=metadata)
    return Refinement(
        body={"message": f"The bearer token was refused: {error.reason}."}, headers={"WWW-Authenticate": challenge}
    )


def _unauthorized(_error: UnauthorizedError, metadata: str | None) -> Refinement:
    return Refinement(headers={"WWW-Authenticate": bearer_challenge(resource_metadata=metadata)} if metadata else {})


def _quota(error: QuotaExceededError, _metadata: str | None) -> Refinement:
    # The reference host's details shape ({path, message}), with the numbers beside it.
    details = [
        {
            "path": name,
            "message": f"{error.used[name]} of {error.limit[name]} used; this save needs {error.requested[name]}",
            "limit": error.limit[name],
            "used": error.used[name],
            "requested": error.requested[name],
        }
        for name in error.exceeded
    ]
    return Refinement(body={"details": details})


def _conflict(error: RevisionConflictError, _metadata: str | None) -> Refinement:
    # The caller's own memory as it is now (the use case read it owner-scoped), and its tag to retry with.
    if error.current is None:
        return Refinement()
    return Refinement(body={"memory": memory_json(error.current)}, headers={"ETag": etag(error.current)})


def _too_large(error: BodyTooLargeError, _metadata: str | None) -> Refinement:
    return Refinement(body={"message": f"The request body is over the cap of {error.max_bytes} bytes."})


def _schema_not_ready(_error: SchemaUnavailableError, _metadata: str | None) -> Refinement:
    return Refinement(body={"reason": SCHEMA_NOT_READY_REASON})


def _rate_limited(error: RateLimitedError, _metadata: str | None) -> Refinement:
    retry_after = error.state.retry_after()
    message = (
        f"Too many {error.operation} requests: the limit is {error.rate_limit.describe()}. "
        f"Retry in {retry_after} seconds."
    )
    headers = {**rate_limit_headers(error.state), "Retry-After": str(retry_after)}
    return Refinement(body={"message": message, "retry_after": retry_after}, headers=headers)


def _rail_challenge(code: str) -> Refine:
    """The rail's `WWW-Authenticate`: the error `code`, the refusal's reason, its metadata and scopes."""

    def refine(error: Any, metadata: str | None) -> Refinement:
        reason = getattr(error, "reason", None)
        challenge = bearer_challenge(
            error=code, error_description=reason, resource_metadata=metadata, scope=" ".join(error.scopes)
        )
        body = {"message": f"The bearer token was refused: {reason}."} if reason else {}
        return Refinement(body=body, headers={"WWW-Authenticate": challenge})

    return refine


_BEARER = {"WWW-Authenticate": "Bearer"}
_UNAVAILABLE = ErrorSpec(
    503,
    "unavailable",
    "The memory bank is temporarily unavailable; retry shortly.",
    {"Retry-After": str(RETRY_AFTER_SECONDS)},
)
_NO_STORE = {"Cache-Control": "no-store"}

#: THE mapping from error classes to answers. An error takes the row of the nearest class in its MRO.
ERROR_TABLE: tuple[tuple[type[Exception], ErrorSpec], ...] = (
    # Never the secret: the details name field, kind and character range only.
    (
        SecretDetectedError,
        ErrorSpec(
            422,
            "secret_detected",
            f"{_SECRET_REFUSED} {SAVE_A_POINTER}",
            refine=_secrets,
        ),
    ),
    # Never stored unscreened: a text built to be costly to screen is refused as a whole (ADR 0031).
    (
        ScreenBudgetExceededError,
        ErrorSpec(
            422,
            "screen_budget_exceeded",
            "The memory's text would cost more than the secret screen's budget to check for credentials, so nothing "
            "was saved; see details. Save shorter or plainer text (thousands of assignments, keys or quotes in a row "
            "are what cost).",
            refine=_problems,
        ),
    ),
    # The memory routes (and whatever else reaches the core through them).
    (InvalidInputError, ErrorSpec(400, "invalid_request", "The request is invalid; see details.", refine=_problems)),
    (UnauthorizedError, ErrorSpec(401, "unauthorized", "A valid bearer token is required.", _BEARER, _unauthorized)),
    (CredentialsRefusedError, ErrorSpec(401, "unauthorized", "The bearer token was refused.", _BEARER, _refused)),
    # Before ForbiddenError, its base: the caller holds the scopes but is not the org memory's author.
    (
        NotAuthorError,
        ErrorSpec(
            403,
            "not_memory_author",
            "Only the memory's author or an org:admin may change or delete a memory of the organization's bank; "
            "nothing was changed.",
        ),
    ),
    (
        ForbiddenError,
        ErrorSpec(
            403, "insufficient_scope", "The token lacks the scope this operation requires.", refine=_missing_scope
        ),
    ),
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
            refine=_quota,
        ),
    ),
    # Fixed text on purpose: malformed, never-existing and someone else's ids must give byte-identical bodies.
    (NotFoundError, ErrorSpec(404, "memory_not_found", "No memory with this id.")),
    (
        RevisionConflictError,
        ErrorSpec(
            412,
            "revision_conflict",
            "The memory changed since the revision this change was based on, so nothing was written; `memory` is "
            "how it is now. Show it, and change that version if it still needs it.",
            refine=_conflict,
        ),
    ),
    (BodyTooLargeError, ErrorSpec(413, "payload_too_large", "The request body is too large.", refine=_too_large)),
    (UnsupportedMediaTypeError, ErrorSpec(415, "unsupported_media_type", "Send the body as application/json.")),
    (
        RateLimitedError,
        ErrorSpec(429, "rate_limited", "Too many requests; retry after Retry-After seconds.", refine=_rate_limited),
    ),
    (UnavailableError, _UNAVAILABLE),
    # A vanished schema is a 503 like any outage; its body adds the reason `/readyz` gives.
    (SchemaUnavailableError, attrs.evolve(_UNAVAILABLE, refine=_schema_not_ready)),
    # The MCP rail's bearer gate at /mcp/agent: the reference host's codes.
    (
        RailTokenMissingError,
        ErrorSpec(
            401,
            "missing_mcp_token",
            "Send a bearer token: Authorization: Bearer <token>.",
            refine=_rail_challenge("missing_mcp_token"),
            surface=Surface.RAIL,
        ),
    ),
    (
        RailTokenRefusedError,
        ErrorSpec(
            401,
            "invalid_mcp_token",
            "The bearer token is unknown or revoked.",
            refine=_rail_challenge("invalid_mcp_token"),
            surface=Surface.RAIL,
        ),
    ),
    (
        RailScopeMissingError,
        ErrorSpec(
            403,
            "insufficient_mcp_scope",
            "The token has neither mcp:read nor mcp:write, so it cannot use the rail.",
            # RFC 6750's code in the challenge, which OAuth clients act on (step-up authorization).
            refine=_rail_challenge("insufficient_scope"),
            surface=Surface.RAIL,
        ),
    ),
    # The standalone panel's sign-in routes (/panel/session).
    (
        BadSignInError,
        ErrorSpec(
            400,
            "invalid_request",
            'Send {"link": "..."} or {"token": "..."} as JSON.',
            _NO_STORE,
            surface=Surface.PANEL,
        ),
    ),
    (SignedOutError, ErrorSpec(401, "signed_out", "You are not signed in.", _NO_STORE, surface=Surface.PANEL)),
    (
        LinkRejectedError,
        ErrorSpec(
            401,
            "link_rejected",
            "This sign-in link has already been used or has expired. Ask for a new one with `memorybank panel-link`.",
            _NO_STORE,
            surface=Surface.PANEL,
        ),
    ),
    (
        TokenRejectedError,
        ErrorSpec(
            401,
            "token_rejected",
            "That API token is not valid: it is unknown or has been revoked.",
            _NO_STORE,
            surface=Surface.PANEL,
        ),
    ),
    (
        CrossSiteRefusedError,
        ErrorSpec(
            403,
            "cross_site_refused",
            "This request did not come from the memory bank's own page.",
            _NO_STORE,
            surface=Surface.PANEL,
        ),
    ),
)

_BY_CLASS: Mapping[type[BaseException], ErrorSpec] = dict(ERROR_TABLE)
_ROUTING_CODES = {404: ("not_found", "No such route."), 405: ("method_not_allowed", "Method not allowed here.")}
INTERNAL_ERROR = ErrorSpec(
    500, "internal_error", "Something went wrong on our side; the request id is in X-Request-Id."
)


def spec_for(error: BaseException) -> ErrorSpec | None:
    """The table's row for `error` (that of the nearest class in its MRO), or None when the error is unexpected."""
    return next((_BY_CLASS[cls] for cls in type(error).__mro__ if cls in _BY_CLASS), None)


def error_response(error: BaseException, *, resource_metadata: str | None = None) -> Response | None:
    """The response for an expected error, or None when `error` is unexpected (a bug).

    `resource_metadata` (the URL of this server's RFC 9728 metadata) goes into every bearer challenge,
    so an OAuth client can discover where to get a token.
    """
    spec = spec_for(error)
    if spec is None:
        return None
    body: dict[str, object] = {"error": spec.code, "message": spec.message}
    headers = dict(spec.headers)
    if spec.refine is not None:
        refinement = spec.refine(error, resource_metadata)
        body.update(refinement.body)
        headers.update(refinement.headers)
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
