"""API tokens for the standalone server: issue, authenticate, list and revoke.

Secrets are 256 random bits, shown once; only their SHA-256 is stored. A fast
hash is right here because the secret has full entropy: there is nothing to
brute-force that a slow hash would protect.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence

import attrs

from memorybank_core import ids
from memorybank_core.banks import ORG_SCOPES
from memorybank_core.clock import SystemClock
from memorybank_core.entities import ApiToken
from memorybank_core.errors import InvalidInputError, NotFoundError
from memorybank_core.ports import Clock, TokenStore
from memorybank_core.use_cases import READ_SCOPE, WRITE_SCOPE

KNOWN_SCOPES = frozenset({READ_SCOPE, WRITE_SCOPE})
"""The memory scopes: what a token gets when none are named, what a panel session keeps, what an issuer may map."""
TOKEN_SCOPES = KNOWN_SCOPES | ORG_SCOPES
"""What a built-in token may be granted: the memory scopes and, named explicitly, the organization bank's
(`org:read`, `org:write`, `org:admin`), for the organization the token is made for."""
#: Every secret starts with this, so scanners and humans can tell what leaked.
SECRET_PREFIX = "mbk_"  # noqa: S105 - a public marker, not a secret


@attrs.frozen(kw_only=True)
class TokenPrincipal:
    """The principal a valid token speaks for."""

    user_id: str
    organization_id: str
    scopes: frozenset[str]
    credential_id: str | None = attrs.field(default=None, eq=False)
    """The token's (or panel session's) id: per-credential rate limits count against it (hashed).

    Not part of equality: two credentials of one person with the same scopes speak for the same principal."""


@attrs.frozen(kw_only=True)
class IssuedToken:
    """A token just created: its record and the secret, which is never retrievable again."""

    token: ApiToken
    secret: str


def hash_secret(secret: str) -> str:
    """The stored form of a token secret."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


#: How many verified tokens a `TokenService` remembers (least recently used ones go first).
VERIFIED_CACHE_SIZE = 10_000


class TokenService:
    """Issues and checks bearer tokens against a TokenStore.

    `authenticate` remembers the tokens it verified, each with the store's revocation generation
    at the time, and trusts a remembered token only while that generation is unchanged. Each
    call still reads the generation (one tiny read, in the request's unit of work when a facade
    opened one), so a revocation anywhere, by any process, takes effect on the next request in
    every worker; what is saved is the token lookup itself. Only valid tokens are remembered,
    each under its own secret's hash: nothing is shared between callers.
    """

    def __init__(self, *, store: TokenStore, clock: Clock | None = None) -> None:
        self._store = store
        self._clock = clock or SystemClock()
        self._verified: OrderedDict[str, tuple[int, TokenPrincipal]] = OrderedDict()
        self._verified_lock = threading.Lock()

    def issue(self, *, user_id: str, org_id: str, scopes: Collection[str] = KNOWN_SCOPES) -> IssuedToken:
        """Create a token for `user_id` in `org_id` with `scopes` (of `TOKEN_SCOPES`); its org scopes are for
        `org_id`'s shared bank.

        Raises:
            InvalidInputError: a malformed `usr_`/`org_` id, or an unknown or empty scope set.
        """
        ids.parse_id(user_id, prefix=ids.USER_PREFIX, field="user")
        ids.parse_id(org_id, prefix=ids.ORGANIZATION_PREFIX, field="org")
        granted = frozenset(scopes)
        unknown = granted - TOKEN_SCOPES
        if unknown or not granted:
            known = ", ".join(sorted(TOKEN_SCOPES))
            raise InvalidInputError("scope", f"must be one or more of {known}")
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        token = ApiToken(
            id=ids.new_id(ids.TOKEN_PREFIX),
            token_hash=hash_secret(secret),
            user_id=user_id,
            org_id=org_id,
            scopes=granted,
            created_at=self._clock.now(),
        )
        self._store.add(token)
        return IssuedToken(token=token, secret=secret)

    def authenticate(self, secret: str) -> TokenPrincipal | None:
        """The principal behind a live token, or None for an unknown or revoked one."""
        if not secret.startswith(SECRET_PREFIX) or len(secret) > 128:
            return None
        token_hash = hash_secret(secret)
        return self._live(token_hash, lambda: self._store.find_by_hash(token_hash))

    def live_principal(self, token_id: str) -> TokenPrincipal | None:
        """The principal of the token `token_id` while it is live; None once it is revoked, or if unknown.

        Checked like `authenticate` (a revocation anywhere shows on the next call): how a panel session
        made from a token ends with it.
        """
        if not ids.is_id(token_id, prefix=ids.TOKEN_PREFIX):
            return None
        # Token ids and secret hashes (hex) never collide as keys: an id has an underscore.
        return self._live(token_id, lambda: self._store.get(token_id))

    def _live(self, key: str, lookup: Callable[[], ApiToken | None]) -> TokenPrincipal | None:
        # Read the generation before the token: a revocation committed in between bumps it, so a
        # token found live here is re-checked on the next call.
        generation = self._store.revocation_generation()
        with self._verified_lock:
            remembered = self._verified.get(key)
            if remembered is not None and remembered[0] == generation:
                self._verified.move_to_end(key)
                return remembered[1]
        token = lookup()
        if token is None or token.revoked_at is not None:
            with self._verified_lock:
                self._verified.pop(key, None)
            return None
        principal = TokenPrincipal(
            user_id=token.user_id, organization_id=token.org_id, scopes=token.scopes, credential_id=token.id
        )
        with self._verified_lock:
            self._verified[key] = (generation, principal)
            self._verified.move_to_end(key)
            while len(self._verified) > VERIFIED_CACHE_SIZE:
                self._verified.popitem(last=False)
        return principal

    def list(self, *, user_id: str | None = None) -> Sequence[ApiToken]:
        """Tokens (never secrets), optionally one user's."""
        return self._store.list(user_id=user_id)

    def revoke(self, token_or_id: str) -> ApiToken:
        """Revoke a token given its id (`tok_…`) or its secret; it stops working on the next request.

        Raises:
            NotFoundError: no live token matches.
        """
        if ids.is_id(token_or_id, prefix=ids.TOKEN_PREFIX):
            token = self._store.get(token_or_id)
        else:
            token = self._store.find_by_hash(hash_secret(token_or_id))
        if token is None or not self._store.revoke(token.id, at=self._clock.now()):
            raise NotFoundError("token")
        return token
