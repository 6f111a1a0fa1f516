"""Verified tokens are remembered, and a revocation by anyone ends that on the very next call."""

from __future__ import annotations

from memorybank_core import ApiToken, InMemoryTokenStore, TokenService
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.conftest import start_clock


class CountingStore(InMemoryTokenStore):
    """Counts the full token lookups."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0

    def find_by_hash(self, token_hash: str) -> ApiToken | None:
        self.lookups += 1
        return super().find_by_hash(token_hash)


def _issue(service: TokenService) -> str:
    return service.issue(user_id=new_id(USER_PREFIX), org_id=new_id(ORGANIZATION_PREFIX)).secret


def test_a_verified_token_is_not_looked_up_again_while_nothing_is_revoked() -> None:
    store = CountingStore()
    service = TokenService(store=store, clock=start_clock())
    secret = _issue(service)

    first = service.authenticate(secret)
    second = service.authenticate(secret)

    assert first is not None
    assert second == first
    assert store.lookups == 1


def test_a_revocation_by_another_process_takes_effect_on_the_next_call() -> None:
    store = CountingStore()
    worker_one = TokenService(store=store, clock=start_clock())  # two workers over one database
    worker_two = TokenService(store=store, clock=start_clock())
    secret = _issue(worker_one)
    assert worker_one.authenticate(secret) is not None
    assert worker_two.authenticate(secret) is not None

    worker_two.revoke(secret)

    assert worker_one.authenticate(secret) is None
    assert worker_two.authenticate(secret) is None


def test_revoking_one_token_leaves_others_working_after_one_fresh_lookup() -> None:
    store = CountingStore()
    service = TokenService(store=store, clock=start_clock())
    kept, revoked = _issue(service), _issue(service)
    assert service.authenticate(kept) is not None
    assert service.authenticate(revoked) is not None

    service.revoke(revoked)

    assert service.authenticate(revoked) is None
    assert service.authenticate(kept) is not None
    lookups = store.lookups
    assert service.authenticate(kept) is not None
    assert store.lookups == lookups


def test_an_unknown_secret_is_never_remembered() -> None:
    store = CountingStore()
    service = TokenService(store=store, clock=start_clock())

    assert service.authenticate("mbk_not-a-token") is None
    assert service.authenticate("mbk_not-a-token") is None
    assert store.lookups == 2
