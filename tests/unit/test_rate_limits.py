"""The rate-limit policy: rules, whose budget a request counts against, and what a refusal carries."""

from __future__ import annotations

import pytest

from adapters_ratelimit import LimitsRateLimiter
from memorybank_core import (
    InvalidInputError,
    Operation,
    RateLimit,
    RateLimitedError,
    RateLimiter,
    RateLimitPolicy,
    RateLimits,
    TokenPrincipal,
)
from memorybank_core.ids import ORGANIZATION_PREFIX, TOKEN_PREFIX, USER_PREFIX, new_id
from memorybank_core.rate_limits import DEFAULT_USER_LIMITS, rate_limit_key
from memorybank_core.rate_windows import WindowState


def _principal(
    user_id: str | None = None, credential_id: str | None = None, *, org_id: str | None = None
) -> TokenPrincipal:
    return TokenPrincipal(
        user_id=user_id or new_id(USER_PREFIX),
        organization_id=org_id or new_id(ORGANIZATION_PREFIX),
        scopes=frozenset({"mcp:read", "org:read"} if org_id else {"mcp:read"}),
        credential_id=credential_id,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("120/minute", RateLimit(120, 60)),
        ("10/second", RateLimit(10, 1)),
        ("1000/hours", RateLimit(1000, 3600)),
        (" 5000 / day ", RateLimit(5000, 86400)),
        ("30/5 minutes", RateLimit(30, 300)),
    ],
)
def test_a_limit_reads_as_count_per_unit(text: str, expected: RateLimit) -> None:
    assert RateLimit.parse(text) == expected


@pytest.mark.parametrize("text", ["", "0/minute", "10/0 minutes", "-1/minute", "10/fortnight", "10", "ten/minute"])
def test_a_malformed_limit_is_refused_naming_the_form(text: str) -> None:
    with pytest.raises(InvalidInputError, match="120/minute"):
        RateLimit.parse(text)


def test_rules_change_the_defaults_and_later_rules_win() -> None:
    policy = RateLimitPolicy.from_rules(["*=10/minute", "search=300/minute", "delete=off", "token.save=2/second"])

    assert policy.per_user == {
        Operation.SAVE: RateLimit(10, 60),
        Operation.SEARCH: RateLimit(300, 60),
        Operation.LIST: RateLimit(10, 60),
    }
    assert policy.per_token == {Operation.SAVE: RateLimit(2, 1)}
    assert RateLimitPolicy.from_rules(policy.describe()) == policy


@pytest.mark.parametrize("rule", ["save=1/30 days", "save=7/90 minutes", "save=5/2 hours", "save=3/45 seconds"])
def test_every_limit_is_described_as_a_rule_that_reads_back(rule: str) -> None:
    policy = RateLimitPolicy.from_rules([rule])
    assert RateLimitPolicy.from_rules(policy.describe()) == policy


def test_without_rules_every_operation_has_the_documented_default_and_tokens_none() -> None:
    policy = RateLimitPolicy.from_rules([])

    assert policy.per_user == DEFAULT_USER_LIMITS
    assert set(policy.per_user) == set(Operation)
    assert policy.per_token == {}
    assert policy.per_org == {}


@pytest.mark.parametrize(
    "rule",
    ["org.=1/minute", "org.find=1/minute", "org.save=lots", "org.token.save=1/minute", "token.org.save=1/second"],
)
def test_a_malformed_organization_rule_is_refused_with_its_field(rule: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        RateLimitPolicy.from_rules([rule])

    assert raised.value.problems[0].path == "rate_limit"


@pytest.mark.parametrize("rule", ["search", "find=10/minute", "token.=1/second", "search=lots", "=1/minute"])
def test_a_malformed_rule_is_refused_with_its_field(rule: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        RateLimitPolicy.from_rules([rule])

    assert raised.value.problems[0].path == "rate_limit"


def test_a_user_over_the_limit_is_refused_with_the_state_and_others_are_not() -> None:
    limits = RateLimits(limiter=LimitsRateLimiter(), policy=RateLimitPolicy.from_rules(["search=2/minute"]))
    flooder, quiet = _principal(), _principal()
    limits.admit(flooder, Operation.SEARCH)
    limits.admit(flooder, Operation.SEARCH)

    with pytest.raises(RateLimitedError) as raised:
        limits.admit(flooder, Operation.SEARCH)
    state = limits.admit(quiet, Operation.SEARCH)

    assert raised.value.operation is Operation.SEARCH
    assert raised.value.rate_limit == RateLimit(2, 60)
    assert raised.value.state.remaining == 0
    assert raised.value.state.retry_after() >= 1
    assert state is not None
    assert state.remaining == 1
    # Another operation has its own budget.
    assert limits.admit(flooder, Operation.LIST) is not None


def test_a_token_limit_binds_one_credential_while_the_users_other_token_goes_on() -> None:
    policy = RateLimitPolicy.from_rules(["save=100/minute", "token.save=1/minute"])
    limits = RateLimits(limiter=LimitsRateLimiter(), policy=policy)
    user_id = new_id(USER_PREFIX)
    laptop, phone = (_principal(user_id, new_id(TOKEN_PREFIX)) for _ in range(2))
    limits.admit(laptop, Operation.SAVE)

    with pytest.raises(RateLimitedError):
        limits.admit(laptop, Operation.SAVE)
    state = limits.admit(phone, Operation.SAVE)

    # The tighter window is reported: the phone's token has no request left, the user has 98.
    assert state is not None
    assert (state.limit, state.remaining) == (1, 0)


def test_a_runaway_token_refused_by_its_own_limit_does_not_use_up_the_users_budget() -> None:
    policy = RateLimitPolicy.from_rules(["save=5/minute", "token.save=1/minute"])
    limits = RateLimits(limiter=LimitsRateLimiter(), policy=policy)
    user_id = new_id(USER_PREFIX)
    laptop, phone = (_principal(user_id, new_id(TOKEN_PREFIX)) for _ in range(2))
    limits.admit(laptop, Operation.SAVE)
    for _ in range(10):
        with pytest.raises(RateLimitedError) as refused:
            limits.admit(laptop, Operation.SAVE)
        assert refused.value.rate_limit == RateLimit(1, 60)  # the token's own limit, not the user's

    state = limits.admit(phone, Operation.SAVE)

    assert state is not None
    assert (state.limit, state.remaining) == (1, 0)  # the phone's token window; the user has 3 left


def test_a_principal_without_a_credential_id_gets_the_user_limits_only() -> None:
    limits = RateLimits(limiter=LimitsRateLimiter(), policy=RateLimitPolicy.from_rules(["token.*=1/minute"]))
    host_user = _principal()

    states = [limits.admit(host_user, Operation.SEARCH) for _ in range(3)]

    assert [s.remaining for s in states if s is not None] == [119, 118, 117]


class _DownLimiter(RateLimiter):
    def hit(self, *, key: str, limit: RateLimit) -> WindowState | None:
        return None


def test_an_unreachable_limiter_allows_the_request_without_a_state() -> None:
    limits = RateLimits(limiter=_DownLimiter(), policy=RateLimitPolicy.from_rules(["*=1/minute"]))
    principal = _principal()

    assert [limits.admit(principal, Operation.SAVE) for _ in range(3)] == [None, None, None]


def test_no_limit_for_an_operation_means_no_check() -> None:
    limits = RateLimits(limiter=LimitsRateLimiter(), policy=RateLimitPolicy.from_rules(["delete=off"]))

    assert limits.admit(_principal(), Operation.DELETE) is None


def test_an_organization_limit_is_one_budget_for_all_its_members_and_no_other_organizations() -> None:
    policy = RateLimitPolicy.from_rules(["save=100/minute", "org.save=3/minute", "org.list=off"])
    limits = RateLimits(limiter=LimitsRateLimiter(), policy=policy)
    acme, globex = new_id(ORGANIZATION_PREFIX), new_id(ORGANIZATION_PREFIX)
    ann, amy, cat = _principal(org_id=acme), _principal(org_id=acme), _principal(org_id=globex)
    limits.admit(ann, Operation.SAVE)
    limits.admit(amy, Operation.SAVE)
    last = limits.admit(ann, Operation.SAVE)

    with pytest.raises(RateLimitedError) as refused:
        limits.admit(amy, Operation.SAVE)
    other = limits.admit(cat, Operation.SAVE)

    assert last is not None
    assert (last.limit, last.remaining) == (3, 0)  # the organization's window is the tighter one
    assert refused.value.rate_limit == RateLimit(3, 60)
    assert other is not None
    assert (other.limit, other.remaining) == (3, 2)  # another organization's budget is its own
    assert limits.admit(amy, Operation.LIST) is not None  # list has a user limit only
    assert policy.per_org == {Operation.SAVE: RateLimit(3, 60)}
    assert RateLimitPolicy.from_rules(policy.describe()) == policy


def test_an_organization_counter_cannot_be_named_by_a_user_id() -> None:
    org_id = new_id(ORGANIZATION_PREFIX)

    assert rate_limit_key(Operation.SAVE, org_id=org_id) == f"save:o:{org_id}"
    assert rate_limit_key(Operation.SAVE, user_id=f"o:{org_id}") != rate_limit_key(Operation.SAVE, org_id=org_id)


def test_a_credential_without_an_org_scope_never_spends_its_organizations_budget() -> None:
    limits = RateLimits(limiter=LimitsRateLimiter(), policy=RateLimitPolicy.from_rules(["org.search=1/minute"]))
    acme = new_id(ORGANIZATION_PREFIX)
    outsider = TokenPrincipal(user_id=new_id(USER_PREFIX), organization_id=acme, scopes=frozenset({"mcp:read"}))
    member = _principal(org_id=acme)

    states = [limits.admit(outsider, Operation.SEARCH) for _ in range(3)]
    state = limits.admit(member, Operation.SEARCH)

    assert [s.limit for s in states if s is not None] == [120, 120, 120]  # its user budget only
    assert state is not None
    assert (state.limit, state.remaining) == (1, 0)
