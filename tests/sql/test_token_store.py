"""SqlTokenStore behaves like the in-memory token store, and serves TokenService end to end."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from memorybank_core import ApiToken, FixedClock, InMemoryTokenStore, NotFoundError, TokenService, TokenStore
from memorybank_core.ids import ORGANIZATION_PREFIX, TOKEN_PREFIX, USER_PREFIX, new_id
from memorybank_core.tokens import hash_secret
from tests.sql.backends import MysqlFactory, SqliteFactory

START = datetime(2026, 7, 2, 12, 0, 0, 250_000, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def tokens(request: pytest.FixtureRequest) -> Iterator[TokenStore]:
    """An empty token store of each kind; the in-memory one is the reference."""
    if request.param == "memory":
        yield InMemoryTokenStore()
        return
    factory: SqliteFactory | MysqlFactory = request.getfixturevalue(f"{request.param}_factory")
    factory.fresh()
    yield factory.storage.token_store


def token(user_id: str, *, at: datetime = START, secret: str = "") -> ApiToken:
    return ApiToken(
        id=new_id(TOKEN_PREFIX),
        token_hash=hash_secret(secret or new_id("secret")),
        user_id=user_id,
        org_id=new_id(ORGANIZATION_PREFIX),
        scopes={"mcp:read", "mcp:write"},
        created_at=at,
    )


def test_tokens_are_found_by_hash_and_by_id_exactly_as_stored(tokens: TokenStore) -> None:
    stored = token(new_id(USER_PREFIX), secret="mbk_the-secret")
    tokens.add(stored)
    assert tokens.find_by_hash(hash_secret("mbk_the-secret")) == stored
    assert tokens.get(stored.id) == stored
    assert tokens.find_by_hash(hash_secret("mbk_other")) is None
    assert tokens.get(new_id(TOKEN_PREFIX)) is None


def test_tokens_list_oldest_first_for_everyone_or_one_user(tokens: TokenStore) -> None:
    alice, bob = new_id(USER_PREFIX), new_id(USER_PREFIX)
    made = [token(owner, at=START + timedelta(seconds=n)) for n, owner in enumerate([bob, alice, bob])]
    for item in reversed(made):
        tokens.add(item)
    assert tokens.list(user_id=None) == made
    assert tokens.list(user_id=bob) == [made[0], made[2]]
    assert tokens.list(user_id=new_id(USER_PREFIX)) == []


def test_a_token_is_revoked_once(tokens: TokenStore) -> None:
    stored = token(new_id(USER_PREFIX))
    tokens.add(stored)
    revoked_at = START + timedelta(hours=1, microseconds=7)
    assert tokens.revoke(stored.id, at=revoked_at) is True
    assert tokens.revoke(stored.id, at=revoked_at + timedelta(hours=1)) is False
    assert tokens.revoke(new_id(TOKEN_PREFIX), at=revoked_at) is False
    again = tokens.get(stored.id)
    assert again is not None
    assert again.revoked_at == revoked_at


def test_token_service_issues_authenticates_and_revokes_through_the_store(tokens: TokenStore) -> None:
    service = TokenService(store=tokens, clock=FixedClock(START))
    issued = service.issue(user_id=new_id(USER_PREFIX), org_id=new_id(ORGANIZATION_PREFIX), scopes={"mcp:read"})
    principal = service.authenticate(issued.secret)
    assert principal is not None
    assert principal.user_id == issued.token.user_id
    assert principal.scopes == frozenset({"mcp:read"})
    service.revoke(issued.token.id)
    assert service.authenticate(issued.secret) is None
    with pytest.raises(NotFoundError):
        service.revoke(issued.secret)
