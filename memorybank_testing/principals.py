"""The suite's principals, its clock, and the bank wired as the server wires it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import attrs

from memorybank_core import READ_SCOPE, WRITE_SCOPE, EventSink, FixedClock, MemoryBank, Quota, SecretScreen
from memorybank_core.configuration import BankSettings
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from memorybank_testing.backends import Backend


@attrs.frozen(kw_only=True)
class User:
    """A test principal: a fresh user in a fresh organization, with both memory scopes unless told."""

    user_id: str = attrs.field(factory=lambda: new_id(USER_PREFIX))
    organization_id: str = attrs.field(factory=lambda: new_id(ORGANIZATION_PREFIX))
    scopes: frozenset[str] = frozenset({READ_SCOPE, WRITE_SCOPE})


def start_clock() -> FixedClock:
    """A clock that moves one millisecond per reading, so every save has its own time."""
    return FixedClock(datetime(2026, 7, 2, 12, 0, tzinfo=UTC), step=timedelta(milliseconds=1))


def bank_over(
    backend: Backend,
    events: EventSink | None = None,
    *,
    secret_screen: SecretScreen | None = None,
    default_quota: Quota | None = None,
    new_id: Callable[[str], str] = new_id,
    settings: BankSettings | None = None,
) -> MemoryBank:
    """The bank as the server wires it, over a host's own ports: `backend`'s store, search engine, unit of work and
    operator controls, with the save path's `secret_screen` when given (so the suite shows ordinary memories pass it).

    The suite's one `MemoryBank(...)`: a host is its own composition root (memorybank's own is
    `memorybank.bootstrap.build`, which this package cannot import), and every contract builds its bank here.
    """
    return MemoryBank(
        store=backend.store,
        search_engine=backend.search_engine,
        clock=start_clock(),
        events=events,
        unit_of_work=backend.unit_of_work,
        controls=backend.controls,
        secret_screen=secret_screen,
        default_quota=default_quota,
        new_id=new_id,
        settings=settings,
    )
