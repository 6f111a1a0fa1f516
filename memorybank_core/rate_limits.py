"""Rate limits: how many requests of each operation a user (and a token) may make per window.

The policy lives here: which operation has which limit, whose budget a request counts against
(the user's, and the credential's when one is named), and what a refusal says. Counting is the
`RateLimiter` port's job (an adapter over a shared store). A facade asks `RateLimits.admit` once per
authenticated request, so a request without valid credentials never touches anyone's budget.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping, Sequence

import attrs

from memorybank_core.banks import ORG_SCOPES
from memorybank_core.errors import InvalidInputError, MemoryBankError
from memorybank_core.ports import Principal, RateLimiter
from memorybank_core.rate_windows import UNITS, RateLimit, WindowState


class Operation(enum.StrEnum):
    """The operations a rate limit can name: one per memory use case."""

    SAVE = "save"
    SEARCH = "search"
    LIST = "list"
    DELETE = "delete"


#: The defaults: far above what a person and their agent do by hand (a save is confirmed by a human),
#: low enough that one runaway client cannot monopolize a worker. Per token: none unless configured.
DEFAULT_USER_LIMITS: Mapping[Operation, RateLimit] = {
    Operation.SAVE: RateLimit(60, 60),
    Operation.SEARCH: RateLimit(120, 60),
    Operation.LIST: RateLimit(120, 60),
    Operation.DELETE: RateLimit(120, 60),
}

PER_TOKEN_RULE = "token."  # noqa: S105 - a rule prefix, not a secret
"""A rule for one credential rather than the whole user starts with this (`token.search=30/minute`)."""

PER_ORG_RULE = "org."
"""A rule for a whole organization (every request of its team bank's members, in either bank) starts with this."""

OFF = "off"


@attrs.frozen(kw_only=True)
class RateLimitPolicy:
    """Which limit applies to each operation, per user and per credential; a missing entry means no limit."""

    per_user: Mapping[Operation, RateLimit] = attrs.field(factory=lambda: dict(DEFAULT_USER_LIMITS))
    per_token: Mapping[Operation, RateLimit] = attrs.field(factory=dict)
    per_org: Mapping[Operation, RateLimit] = attrs.field(factory=dict)
    """One budget per organization, shared by all its members' requests (both banks); none unless configured."""

    @classmethod
    def from_rules(cls, rules: Sequence[str]) -> RateLimitPolicy:
        """The defaults changed by rules like `search=300/minute`, `token.save=10/minute`, `org.save=600/minute`,
        `*=off`.

        `*` names every operation; `off` removes the limit. Later rules win.

        Raises:
            InvalidInputError: ("rate_limit") an unknown operation or a malformed limit.
        """
        per_user = dict(DEFAULT_USER_LIMITS)
        per_token: dict[Operation, RateLimit] = {}
        per_org: dict[Operation, RateLimit] = {}
        for rule in rules:
            name, equals, value = rule.partition("=")
            name, value = name.strip(), value.strip()
            table = per_user
            if name.startswith(PER_TOKEN_RULE):
                table, name = per_token, name.removeprefix(PER_TOKEN_RULE)
            elif name.startswith(PER_ORG_RULE):
                table, name = per_org, name.removeprefix(PER_ORG_RULE)
            if not equals:
                raise InvalidInputError("rate_limit", f"must be OPERATION=LIMIT (e.g. search=120/minute), not {rule!r}")
            operations = _operations(name, rule)
            limit = None if value == OFF else RateLimit.parse(value)
            for operation in operations:
                if limit is None:
                    table.pop(operation, None)
                else:
                    table[operation] = limit
        return cls(per_user=per_user, per_token=per_token, per_org=per_org)

    def describe(self) -> list[str]:
        """The policy as rules `from_rules` reads back (an operation without a user limit is `off`)."""
        user = [f"{op}={_spelled(self.per_user[op])}" if op in self.per_user else f"{op}={OFF}" for op in Operation]
        token = [f"{PER_TOKEN_RULE}{op}={_spelled(limit)}" for op, limit in self.per_token.items()]
        org = [f"{PER_ORG_RULE}{op}={_spelled(limit)}" for op, limit in self.per_org.items()]
        return user + token + org


def _spelled(limit: RateLimit) -> str:
    """`120/minute`, or `1/30 days`: the largest unit that divides the window, as `RateLimit.parse` reads it."""
    unit, seconds = next((unit, seconds) for unit, seconds in reversed(UNITS.items()) if limit.seconds % seconds == 0)
    multiple = limit.seconds // seconds
    return f"{limit.amount}/{unit}" if multiple == 1 else f"{limit.amount}/{multiple} {unit}s"


def _operations(name: str, rule: str) -> tuple[Operation, ...]:
    if name == "*":
        return tuple(Operation)
    try:
        return (Operation(name),)
    except ValueError:
        known = ", ".join(op.value for op in Operation)
        raise InvalidInputError(
            "rate_limit",
            f"must be OPERATION=LIMIT with OPERATION one of {known}, *, token.<one of them> or org.<one of them>; "
            f"not {rule!r}",
        ) from None


class RateLimitedError(MemoryBankError):
    """The caller made too many requests of this operation in the window; nothing was done."""

    def __init__(self, operation: Operation, limit: RateLimit, state: WindowState) -> None:
        self.operation = operation
        self.rate_limit = limit
        self.state = state
        super().__init__(f"rate limit of {limit.describe()} for {operation} reached")


class RateLimits:
    """The rate-limit check a facade makes once per authenticated request, before the use case runs."""

    def __init__(self, *, limiter: RateLimiter, policy: RateLimitPolicy | None = None) -> None:
        self._limiter = limiter
        self.policy = policy or RateLimitPolicy()

    def admit(self, principal: Principal, operation: Operation) -> WindowState | None:
        """Count one request of `operation` by `principal`; the tightest window's state after it.

        None means no limit applies, or the limiter's store could not be reached (the request is
        allowed: an outage of the limiter must not become an outage of the bank). The credential's
        budget is checked first: a request it refuses is not counted against the user, so one
        runaway token cannot use up the budget of the user's other tokens.

        Raises:
            RateLimitedError: a limit is reached; retry after `error.state.retry_after()` seconds.
        """
        tightest: WindowState | None = None
        for key, limit in self._limits(principal, operation):
            state = self._limiter.hit(key=key, limit=limit)
            if state is None:
                continue
            if not state.allowed:
                raise RateLimitedError(operation, limit, state)
            if tightest is None or state.remaining < tightest.remaining:
                tightest = state
        return tightest

    def _limits(self, principal: Principal, operation: Operation) -> list[tuple[str, RateLimit]]:
        found: list[tuple[str, RateLimit]] = []
        token_limit = self.policy.per_token.get(operation)
        credential = getattr(principal, "credential_id", None)
        if token_limit is not None and isinstance(credential, str) and credential:
            found.append((rate_limit_key(operation, credential_id=credential), token_limit))
        user_limit = self.policy.per_user.get(operation)
        if user_limit is not None:
            found.append((rate_limit_key(operation, user_id=principal.user_id), user_limit))
        # An organization's budget counts its team bank's members: credentials holding an org scope. Others (an
        # issuer's tokens without the organization claim, whose organization may be one the whole issuer shares)
        # never spend it, so no issuer-wide organization becomes one budget anyone can exhaust for everyone.
        org_limit = self.policy.per_org.get(operation)
        organization = getattr(principal, "organization_id", None)
        member = bool(ORG_SCOPES & frozenset(principal.scopes))
        if org_limit is not None and member and isinstance(organization, str) and organization:
            found.append((rate_limit_key(operation, org_id=organization), org_limit))
        return found


def rate_limit_key(
    operation: Operation, *, user_id: str | None = None, credential_id: str | None = None, org_id: str | None = None
) -> str:
    """The counter's name: `save:u:<user id>`, `save:t:<sha256 of the credential id>` or `save:o:<org id>`.

    A credential id is hashed so a key names no credential, even one whose id would be sensitive
    in a host's scheme. The `u`/`t`/`o` marker sits at a fixed position, so no user id, however
    spelled, can name a credential's or an organization's counter.
    """
    if org_id is not None:
        return f"{operation}:o:{org_id}"
    if credential_id is not None:
        return f"{operation}:t:{hashlib.sha256(credential_id.encode('utf-8', 'surrogatepass')).hexdigest()}"
    if user_id is None:
        raise ValueError("a rate limit key needs a user id or a credential id")
    return f"{operation}:u:{user_id}"
