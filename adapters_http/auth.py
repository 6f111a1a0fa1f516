"""Who is calling: the `PrincipalResolver` port, the bearer-token resolver, and the in-process path.

The facade authenticates (request -> principal) and nothing more; which scope an
operation needs is the core's decision.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from memorybank_core.errors import InvalidInputError
from memorybank_core.ports import Principal
from memorybank_core.tokens import TokenService

PrincipalResolver = Callable[[Request], Awaitable[Principal | None]]
"""A host's way to tell who sent a request (a session cookie, a bearer token, ...); None when nobody valid did.

It may raise `memorybank_core.UnavailableError` when its own store is down (answered 503).
"""

IN_PROCESS_PRINCIPAL_KEY = "memorybank.principal"
"""ASGI scope key for in-process callers (the MCP facade): a Principal there is used as-is, a
`DeferredPrincipal` is checked in the route's own worker-thread call.

Only code that builds the ASGI scope itself can set it; an HTTP client cannot, so this
is no way around authentication. The caller must have authenticated the principal (or hand its check).
"""
IN_PROCESS_BODY_KEY = "memorybank.body"
"""ASGI scope key for an in-process caller's request body as JSON data its own protocol already decoded
(the MCP rail's `body` argument): the route hands it to the core as it is, instead of bytes to decode again."""


class CallerRefusedError(Exception):
    """A `DeferredPrincipal`'s check turned its caller away: the route does not answer it, the in-process
    caller does (with `error`, in its own terms). Never raised for a network request."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        super().__init__(type(error).__name__)


class DeferredPrincipal:
    """An in-process caller whose credentials are checked by the route, in its one worker-thread call.

    The MCP rail hands one for `execute_capability`, so the bearer check, the gate and the use case
    share one thread-pool hop and one unit of work. `resolve` runs there; it returns the principal or
    raises `CallerRefusedError`, which the route lets through to the in-process caller.
    """

    def __init__(self, resolve: Callable[[], Principal]) -> None:
        self.resolve = resolve


_BEARER = "bearer"


def single_authorization(request: Request) -> str | None:
    """The request's one `Authorization` header, or None without one.

    Raises:
        InvalidInputError: ("authorization") the header is sent more than once. Which one a
            proxy, the framework or a host would read differs, so none is trusted.
    """
    values = request.headers.getlist("authorization")
    if len(values) > 1:
        raise InvalidInputError("authorization", f"must be sent once, not {len(values)} times")
    return values[0] if values else None


def bearer_secret(request: Request) -> str | None:
    """The token in `Authorization: Bearer <token>`, or None when the header is absent or malformed.

    Raises:
        InvalidInputError: ("authorization") the header is sent more than once.
    """
    header = single_authorization(request)
    if header is None:
        return None
    scheme, _, secret = header.strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != _BEARER or not secret or " " in secret:
        return None
    return secret


Authenticate = Callable[[str], Principal | None]
"""A bearer secret -> its principal, or None for an unknown or revoked one (e.g. `TokenService.authenticate`).

It is called in the thread pool (it may read a database or ask an issuer) and may raise
`CredentialsRefusedError` (401 naming the reason) or `UnavailableError` (503) when its store or issuer is down.
"""


class BlockingResolver:
    """A `PrincipalResolver` whose work blocks (a token store, an issuer's keys): it runs in a worker thread.

    The memory routes recognise one and call `resolve_blocking` in the same thread-pool call as
    the use case, inside the use case's unit of work: one hop and one database connection per
    request, the credential check included. Awaited like any other resolver (by a host, or the
    panel's sign-in), it takes a thread-pool hop of its own.
    """

    def __init__(self, resolve: Callable[[Request], Principal | None]) -> None:
        self.resolve_blocking = resolve
        """The check itself, for a caller already in a worker thread; may raise like a resolver."""

    async def __call__(self, request: Request) -> Principal | None:
        """The check, in the thread pool."""
        return await run_in_threadpool(self.resolve_blocking, request)


def awaitable_resolver(resolver: PrincipalResolver, *, wrapped_in: str = "") -> PrincipalResolver:
    """`resolver` as given, once it is known to be awaitable: an `async` callable or a `BlockingResolver`.

    Called when routes are built, so a synchronous `def resolver(request)` is refused there, with the fix,
    rather than answering every request with a 500 (`await` on its result fails). `wrapped_in` names the
    wrapper the caller was building (`panel_calls_only`), for the message.

    Raises:
        TypeError: `resolver` is a synchronous callable.
    """
    if isinstance(resolver, BlockingResolver) or _is_async_callable(resolver):
        return resolver
    name = getattr(resolver, "__name__", None) or type(resolver).__name__
    fixed = f"BlockingResolver({name})"
    if wrapped_in:
        fixed = f"{wrapped_in}({fixed})"
    raise TypeError(
        f"the principal resolver {name} is synchronous, so awaiting it would fail on every request: pass "
        f"{fixed} (adapters_http.BlockingResolver runs it in a worker thread) or make it `async def`"
    )


def _is_async_callable(candidate: object) -> bool:
    while isinstance(candidate, functools.partial):
        candidate = candidate.func
    return inspect.iscoroutinefunction(candidate) or inspect.iscoroutinefunction(getattr(candidate, "__call__", None))  # noqa: B004


def bearer_token_resolver(tokens: TokenService) -> BlockingResolver:
    """The standalone server's resolver: `Authorization: Bearer <secret>` checked against the token store.

    A revoked token fails on the very next request (see `TokenService.authenticate`).
    """
    return bearer_resolver(tokens.authenticate)


def bearer_resolver(authenticate: Authenticate) -> BlockingResolver:
    """A resolver that hands `Authorization: Bearer <secret>` to `authenticate` (in a worker thread)."""

    def resolve(request: Request) -> Principal | None:
        secret = bearer_secret(request)
        if secret is None:
            return None
        return authenticate(secret)

    return BlockingResolver(resolve)


def in_process_principal(request: Request) -> Principal | DeferredPrincipal | None:
    """The principal (or its deferred check) an in-process caller placed in the ASGI scope; None for a
    network request.

    Raises:
        InvalidInputError: ("authorization") a network request sends the header more than once,
            whatever its resolver reads.
    """
    in_process = request.scope.get(IN_PROCESS_PRINCIPAL_KEY)
    if in_process is not None:
        principal: Principal | DeferredPrincipal = in_process
        return principal
    single_authorization(request)
    return None
