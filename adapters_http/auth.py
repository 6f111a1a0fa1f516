"""Who is calling: the `PrincipalResolver` port, the bearer-token resolver, and the in-process path.

The facade authenticates (request -> principal) and nothing more; which scope an
operation needs is the core's decision.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from memorybank_core.ports import Principal
from memorybank_core.tokens import TokenService

PrincipalResolver = Callable[[Request], Awaitable[Principal | None]]
"""A host's way to tell who sent a request (a session cookie, a bearer token, ...); None when nobody valid did.

It may raise `memorybank_core.UnavailableError` when its own store is down (answered 503).
"""

IN_PROCESS_PRINCIPAL_KEY = "memorybank.principal"
"""ASGI scope key for in-process callers (the MCP facade): a Principal there is used as-is.

Only code that builds the ASGI scope itself can set it; an HTTP client cannot, so this
is no way around authentication. The caller must have authenticated the principal.
"""

_BEARER = "bearer"


def bearer_secret(request: Request) -> str | None:
    """The token in `Authorization: Bearer <token>`, or None when the header is absent or malformed."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, secret = header.strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != _BEARER or not secret or " " in secret:
        return None
    return secret


class BearerTokenResolver:
    """The standalone server's resolver: `Authorization: Bearer <secret>` checked with the `TokenService`.

    Every request reads the store's revocation generation (`TokenService.authenticate`), so a
    revoked token fails on the very next request. It is a blocking resolver: the memory routes
    call `resolve_blocking` in the same worker thread and unit of work as the use case, so a
    request makes one thread-pool hop and uses one database connection.
    """

    def __init__(self, tokens: TokenService) -> None:
        self._tokens = tokens

    def resolve_blocking(self, request: Request) -> Principal | None:
        """The principal, from a worker thread (it reads the token store)."""
        secret = bearer_secret(request)
        if secret is None:
            return None
        return self._tokens.authenticate(secret)

    async def __call__(self, request: Request) -> Principal | None:
        """The `PrincipalResolver` form, for callers that are not memory routes."""
        return await run_in_threadpool(self.resolve_blocking, request)


def bearer_token_resolver(tokens: TokenService) -> BearerTokenResolver:
    """The standalone server's resolver (see `BearerTokenResolver`)."""
    return BearerTokenResolver(tokens)
