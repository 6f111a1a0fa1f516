"""API tokens: shown once, stored hashed, revocable by id or secret."""

from __future__ import annotations

import pytest

from memorybank_core import READ_SCOPE, WRITE_SCOPE, InMemoryTokenStore, InvalidInputError, NotFoundError, TokenService
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.conftest import start_clock


@pytest.fixture
def service() -> TokenService:
    return TokenService(store=InMemoryTokenStore(), clock=start_clock())


def issue(service: TokenService, **kwargs: object) -> tuple[str, str]:
    issued = service.issue(user_id=new_id(USER_PREFIX), org_id=new_id(ORGANIZATION_PREFIX), **kwargs)  # type: ignore[arg-type]
    return issued.token.id, issued.secret


def test_a_token_authenticates_as_its_user_with_both_scopes_by_default(service: TokenService) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    issued = service.issue(user_id=user, org_id=org)
    principal = service.authenticate(issued.secret)
    assert principal is not None
    assert (principal.user_id, principal.organization_id) == (user, org)
    assert principal.scopes == {READ_SCOPE, WRITE_SCOPE}


def test_only_the_hash_of_the_secret_is_stored(service: TokenService) -> None:
    token_id, secret = issue(service)
    (stored,) = service.list()
    assert stored.id == token_id
    assert secret not in repr(stored)
    assert stored.token_hash != secret


def test_scopes_can_be_narrowed_and_unknown_scopes_are_refused(service: TokenService) -> None:
    _, secret = issue(service, scopes=[READ_SCOPE])
    principal = service.authenticate(secret)
    assert principal is not None
    assert principal.scopes == {READ_SCOPE}
    for scopes in ([], ["admin"], [READ_SCOPE, "mcp:everything"]):
        with pytest.raises(InvalidInputError):
            issue(service, scopes=scopes)


@pytest.mark.parametrize(
    ("user", "org"), [("usr_bad", None), (None, "org_bad"), ("org_01m8vec22kefdabjbetacebqtp", None)]
)
def test_malformed_owner_ids_are_refused(service: TokenService, user: str | None, org: str | None) -> None:
    with pytest.raises(InvalidInputError):
        service.issue(user_id=user or new_id(USER_PREFIX), org_id=org or new_id(ORGANIZATION_PREFIX))


@pytest.mark.parametrize("by", ["id", "secret"])
def test_revocation_takes_effect_immediately(service: TokenService, by: str) -> None:
    token_id, secret = issue(service)
    _, other_secret = issue(service)
    service.revoke(token_id if by == "id" else secret)
    assert service.authenticate(secret) is None
    assert service.authenticate(other_secret) is not None
    with pytest.raises(NotFoundError):
        service.revoke(token_id)


@pytest.mark.parametrize("secret", ["", "Bearer", "mbk_", "mbk_wrong", "x" * 500, "mbk_" + "a" * 200])
def test_unknown_secrets_do_not_authenticate(service: TokenService, secret: str) -> None:
    issue(service)
    assert service.authenticate(secret) is None


def test_listing_by_user_shows_only_that_users_tokens(service: TokenService) -> None:
    user = new_id(USER_PREFIX)
    mine = service.issue(user_id=user, org_id=new_id(ORGANIZATION_PREFIX)).token.id
    issue(service)
    assert [t.id for t in service.list(user_id=user)] == [mine]
    assert len(service.list()) == 2
