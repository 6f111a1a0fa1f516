"""Operator controls: storage quotas and the memory gate (per user, per organization, everyone).

An operator (CLI or host code, never a user principal) sets them with `MemoryControls`; the
bank reads the ones that apply to each request (`ControlStore.find`, one indexed read in the
request's unit of work) and `resolve` turns them into a `Policy`:

- The gate: memory is on unless it is switched off for everyone (the kill switch), for the
  principal's organization, or for the user. The most restrictive switch wins: switching a user
  on does not override an organization or the kill switch being off (ADR 0017).
- The quota: each measure (memories, characters) comes from the user's own setting, else the
  organization's, else the deployment's default (`--quota-memories`, `--quota-characters`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import attrs

from memorybank_core import events, ids, limits
from memorybank_core.clock import SystemClock
from memorybank_core.entities import (
    CHARACTERS,
    EVERYONE,
    MEMORIES,
    Control,
    Policy,
    Quota,
    SubjectKind,
    Usage,
)
from memorybank_core.errors import InvalidInputError, QuotaExceededError
from memorybank_core.events import LoggingEventSink
from memorybank_core.ports import Clock, ControlStore, EventSink, MemoryStore, NoUnitOfWork, UnitOfWork


def check_quota(quota: Quota, usage: Usage, characters: int, *, new_memory: bool = True) -> None:
    """Refuse one more memory of `characters` on top of `usage` if it breaks `quota` (with `new_memory`
    False, `characters` more of an existing memory: an edit that grows it).

    Raises:
        QuotaExceededError: naming each measure that would be broken.
    """
    exceeded = tuple(
        name
        for name, over in (
            (MEMORIES, new_memory and usage.memories + 1 > quota.max_memories),
            (CHARACTERS, usage.characters + characters > quota.max_characters),
        )
        if over
    )
    if exceeded:
        raise QuotaExceededError(
            exceeded=exceeded,
            limit=quota.as_dict(),
            used=usage.as_dict(),
            requested={MEMORIES: int(new_memory), CHARACTERS: characters},
        )


def merge(current: Control, change: Control) -> Control:
    """`current` with `change`'s settings that are not None, stamped `change.updated_at` (`ControlStore.set`)."""
    return attrs.evolve(
        current,
        enabled=current.enabled if change.enabled is None else change.enabled,
        max_memories=current.max_memories if change.max_memories is None else change.max_memories,
        max_characters=current.max_characters if change.max_characters is None else change.max_characters,
        updated_at=change.updated_at,
    )


def resolve(controls: Sequence[Control], *, user_id: str, org_id: str | None, default: Quota) -> Policy:
    """The policy of a request by `user_id` in `org_id` (None: no organization), from its stored controls."""
    by_kind: dict[SubjectKind, Control] = {}
    for control in controls:
        wanted = {SubjectKind.USER: user_id, SubjectKind.ORG: org_id, SubjectKind.ALL: EVERYONE}[control.kind]
        if control.subject_id == wanted:
            by_kind[control.kind] = control
    # The kill switch first, then the organization, then the user: the first one off names the reason.
    off = next(
        (kind for kind in (SubjectKind.ALL, SubjectKind.ORG, SubjectKind.USER) if _is_off(by_kind.get(kind))), None
    )
    levels = [by_kind.get(SubjectKind.USER), by_kind.get(SubjectKind.ORG)]
    max_memories = next(
        (c.max_memories for c in levels if c is not None and c.max_memories is not None), default.max_memories
    )
    max_characters = next(
        (c.max_characters for c in levels if c is not None and c.max_characters is not None), default.max_characters
    )
    return Policy(
        enabled=off is None,
        switched_off_by=off,
        quota=Quota(max_memories=max_memories, max_characters=max_characters),
    )


def _is_off(control: Control | None) -> bool:
    return control is not None and control.enabled is False


#: What an operator may name as a user or organization: no spaces, no wildcards, no control characters.
_SUBJECT_ID = re.compile(r"^[^\s*%?\x00-\x1f\x7f]+$")
#: Our own id prefixes: a value carrying one must be a well-formed TypeID of the kind asked for.
_PREFIX_OF = {SubjectKind.USER: ids.USER_PREFIX, SubjectKind.ORG: ids.ORGANIZATION_PREFIX}


def clean_subject_id(kind: SubjectKind, value: object) -> str:
    """A user or organization id an operator named, checked; `EVERYONE` for `SubjectKind.ALL`.

    Hosts bring their own ids, so any 1 to 64 visible characters are accepted, except wildcards
    (`*`, `%`, `?`): an operator's typo must never reach more people than it names. An id with one
    of our prefixes (`usr_`, `org_`) must be a well-formed TypeID of the kind asked for, so an
    organization id passed as a user is refused rather than stored as a switch that gates no one.

    Raises:
        InvalidInputError: ("user" or "org") the value is empty, too long, or malformed.
    """
    if kind is SubjectKind.ALL:
        return EVERYONE
    field = kind.value
    if not isinstance(value, str) or not limits.ID.min <= len(value) <= limits.ID.max or not _SUBJECT_ID.match(value):
        raise InvalidInputError(field, f"must be an id of 1 to {limits.ID.max} characters, without spaces or wildcards")
    known = next(
        (prefix for prefix in (ids.USER_PREFIX, ids.ORGANIZATION_PREFIX) if value.startswith(f"{prefix}_")), None
    )
    if known is not None:
        ids.parse_id(value, prefix=_PREFIX_OF[kind], field=field)
    return value


def _quota_subject(kind: SubjectKind, subject_id: object) -> str:
    """The id of a user or organization whose quota an operator changes (everyone's is a server option)."""
    if kind is SubjectKind.ALL:
        raise InvalidInputError("subject", "must be a user or an organization: the default is a server option")
    return clean_subject_id(kind, subject_id)


def _clean_limit(value: int | None, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limits.QUOTA_MAX:
        raise InvalidInputError(field, f"must be a whole number from 0 to {limits.QUOTA_MAX}")
    return value


@attrs.frozen(kw_only=True)
class Effective:
    """What applies to one user in one organization now: `quota show --user`."""

    policy: Policy
    usage: Usage
    controls: tuple[Control, ...]


class MemoryControls:
    """The operator's use cases: switch memory on or off and set quotas. Not reachable with a user principal.

    A host calls these from its admin code (e.g. to suspend an account); `memorybank gate` and
    `memorybank quota` call them from the command line. Every change takes effect on the next request
    of every worker: the bank reads the controls per request.
    """

    def __init__(
        self,
        *,
        controls: ControlStore,
        store: MemoryStore,
        default_quota: Quota | None = None,
        clock: Clock | None = None,
        events: EventSink | None = None,
        unit_of_work: UnitOfWork | None = None,
    ) -> None:
        self._controls = controls
        self._store = store
        self._default = default_quota or Quota()
        self._clock = clock or SystemClock()
        self._events = events or LoggingEventSink()
        self._unit = unit_of_work or NoUnitOfWork()

    def set_gate(self, kind: SubjectKind, subject_id: str | None, *, enabled: bool) -> Control:
        """Switch memory on or off for a user, an organization, or everyone (`SubjectKind.ALL`, the kill switch).

        Raises:
            InvalidInputError: a malformed id; nothing is changed.
        """
        started = time.perf_counter()
        subject = clean_subject_id(kind, subject_id)
        with self._unit():
            control = self._controls.set(
                Control(kind=kind, subject_id=subject, enabled=enabled, updated_at=self._clock.now())
            )
        self._emit(events.GATE_CHANGED, started, subject_kind=kind.value, subject_id=subject, enabled=int(enabled))
        return control

    def set_quota(
        self,
        kind: SubjectKind,
        subject_id: str | None,
        *,
        max_memories: int | None = None,
        max_characters: int | None = None,
    ) -> Control:
        """Set a user's or an organization's quota; a measure left None keeps its current setting.

        Existing memories are never removed: a user over a lowered quota just cannot save until under it.

        Raises:
            InvalidInputError: a malformed id, `SubjectKind.ALL` (the deployment default is a server option),
                no measure given, or a value outside 0 to `limits.QUOTA_MAX`; nothing is changed.
        """
        started = time.perf_counter()
        subject = _quota_subject(kind, subject_id)
        memories = _clean_limit(max_memories, MEMORIES)
        characters = _clean_limit(max_characters, CHARACTERS)
        if memories is None and characters is None:
            raise InvalidInputError("quota", "needs a number of memories, of characters, or both")
        with self._unit():
            control = self._controls.set(
                Control(
                    kind=kind,
                    subject_id=subject,
                    max_memories=memories,
                    max_characters=characters,
                    updated_at=self._clock.now(),
                )
            )
        self._emit(events.QUOTA_CHANGED, started, subject_kind=kind.value, subject_id=subject)
        return control

    def unset_quota(self, kind: SubjectKind, subject_id: str | None) -> bool:
        """Forget a user's or an organization's quota, so the next level's applies; its gate stays as set.

        Returns False if no quota was set for it.

        Raises:
            InvalidInputError: a malformed id, or `SubjectKind.ALL` (the default is a server option); nothing
                is changed.
        """
        started = time.perf_counter()
        subject = _quota_subject(kind, subject_id)
        with self._unit():
            unset = self._controls.unset_quota(kind=kind, subject_id=subject, at=self._clock.now())
        self._emit(events.QUOTA_CHANGED, started, subject_kind=kind.value, subject_id=subject)
        return unset

    def clear(self, kind: SubjectKind, subject_id: str | None) -> bool:
        """Forget what was set for a subject (gate and quota), so the next level applies; False if nothing was.

        Raises:
            InvalidInputError: a malformed id; nothing is changed.
        """
        started = time.perf_counter()
        subject = clean_subject_id(kind, subject_id)
        with self._unit():
            cleared = self._controls.clear(kind=kind, subject_id=subject)
        self._emit(events.CONTROLS_CLEARED, started, subject_kind=kind.value, subject_id=subject, cleared=int(cleared))
        return cleared

    def list(self) -> Sequence[Control]:
        """Every control set, the kill switch first, then organizations, then users."""
        with self._unit():
            return self._controls.list()

    def effective(self, *, user_id: str, org_id: str | None = None) -> Effective:
        """The gate, quota and use that apply to `user_id` when working in `org_id` (None: leave organizations out).

        Raises:
            InvalidInputError: a malformed id.
        """
        user = clean_subject_id(SubjectKind.USER, user_id)
        org = clean_subject_id(SubjectKind.ORG, org_id) if org_id is not None else None
        with self._unit():
            found = tuple(self._controls.find(user_id=user, org_id=org))
            usage = self._store.usage(user_id=user)
        return Effective(
            policy=resolve(found, user_id=user, org_id=org, default=self._default), usage=usage, controls=found
        )

    def _emit(self, name: str, started: float, **fields: str | int | float) -> None:
        fields["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        self._events.emit(name, fields)
