"""The API token store's contract (`TokenStore`): what `TokenService` and every server process rely on.

Tokens come back exactly as stored (hashes only, never secrets), list oldest first for everyone or one
user, are revoked once, and every revocation moves the counter other processes watch. Needs the
backend's `token_store`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memorybank_core import ApiToken, FixedClock, NotFoundError, TokenService, TokenStore
from memorybank_core.ids import ORGANIZATION_PREFIX, TOKEN_PREFIX, USER_PREFIX, new_id
from memorybank_core.tokens import hash_secret
from memorybank_testing.backends import Backend

#: Microseconds included: a store must keep them.
START = datetime(2026, 7, 2, 12, 0, 0, 250_000, tzinfo=UTC)


def a_token(user_id: str, *, at: datetime = START, secret: str = "") -> ApiToken:
    """A token of `user_id` as `TokenService` issues them, created `at`, with `secret` (or a random one)."""
    return ApiToken(
        id=new_id(TOKEN_PREFIX),
        token_hash=hash_secret(secret or new_id("secret")),
        user_id=user_id,
        org_id=new_id(ORGANIZATION_PREFIX),
        scopes={"mcp:read", "mcp:write"},
        created_at=at,
    )


class TokenStoreContract:
    """Finding, listing and revoking API tokens, directly and through `TokenService`."""

    @pytest.fixture
    def token_store(self, backend: Backend) -> TokenStore:
        return backend.require(backend.token_store, "token_store")

    def test_tokens_are_found_by_hash_and_by_id_exactly_as_stored(self, token_store: TokenStore) -> None:
        stored = a_token(new_id(USER_PREFIX), secret="mbk_the-secret")  # noqa: S106 - a test's own secret
        token_store.add(stored)

        assert token_store.find_by_hash(hash_secret("mbk_the-secret")) == stored
        assert token_store.get(stored.id) == stored
        assert token_store.find_by_hash(hash_secret("mbk_other")) is None
        assert token_store.get(new_id(TOKEN_PREFIX)) is None

    def test_tokens_list_oldest_first_for_everyone_or_one_user(self, token_store: TokenStore) -> None:
        alice, bob = new_id(USER_PREFIX), new_id(USER_PREFIX)
        made = [a_token(owner, at=START + timedelta(seconds=n)) for n, owner in enumerate([bob, alice, bob])]
        for token in reversed(made):
            token_store.add(token)

        assert list(token_store.list(user_id=None)) == made
        assert list(token_store.list(user_id=bob)) == [made[0], made[2]]
        assert list(token_store.list(user_id=new_id(USER_PREFIX))) == []

    def test_a_token_is_revoked_once_and_each_revocation_moves_the_counter(self, token_store: TokenStore) -> None:
        stored, other = a_token(new_id(USER_PREFIX)), a_token(new_id(USER_PREFIX))
        token_store.add(stored)
        token_store.add(other)
        generation = token_store.revocation_generation()
        revoked_at = START + timedelta(hours=1, microseconds=7)

        assert token_store.revoke(stored.id, at=revoked_at) is True
        after_one = token_store.revocation_generation()
        assert token_store.revoke(stored.id, at=revoked_at + timedelta(hours=1)) is False
        assert token_store.revoke(new_id(TOKEN_PREFIX), at=revoked_at) is False

        assert after_one != generation
        assert token_store.revocation_generation() == after_one  # a refused revocation moves nothing
        again = token_store.get(stored.id)
        assert again is not None
        assert again.revoked_at == revoked_at
        assert token_store.get(other.id) == other

    def test_token_service_issues_authenticates_and_revokes_through_the_store(self, token_store: TokenStore) -> None:
        service = TokenService(store=token_store, clock=FixedClock(START))
        issued = service.issue(user_id=new_id(USER_PREFIX), org_id=new_id(ORGANIZATION_PREFIX), scopes={"mcp:read"})
        kept = service.issue(user_id=issued.token.user_id, org_id=issued.token.org_id)

        principal = service.authenticate(issued.secret)

        assert principal is not None
        assert (principal.user_id, principal.scopes) == (issued.token.user_id, frozenset({"mcp:read"}))
        service.revoke(issued.token.id)
        assert service.authenticate(issued.secret) is None
        assert service.authenticate(kept.secret) is not None
        with pytest.raises(NotFoundError):
            service.revoke(issued.secret)  # already revoked: not found, as an unknown token is
