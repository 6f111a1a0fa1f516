"""Clocks: the system one, and a settable one for tests and imports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

from memorybank_core.ports import Clock


class SystemClock(Clock):
    """The machine's clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


@attrs.define
class FixedClock(Clock):
    """A clock that returns a set time, moved on by `step` after each reading."""

    current: datetime
    step: timedelta = timedelta(0)

    def now(self) -> datetime:
        value = self.current
        self.current = value + self.step
        return value
