"""`SqlControlStore`: the operators' gate switches and quotas in `memory_control`.

The bank needs the controls of each request (`find`: the user's, the organization's and everyone's).
A worker keeps those it read, each with the controls' change counter at the time
(`adapters_mysql.change_counters`), and trusts them only while the counter is unchanged: every
change through this store bumps the counter in its own transaction, and every request reads the
counter (in the same statement as the token's revocation counter, once per request), so a change
made by any process — `memorybank gate`, a host's admin code through `MemoryControls` — applies to
every worker's very next request. A change written to `memory_control` by hand, not through this
store, is not seen until the next change through it (or a restart).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from adapters_mysql.change_counters import CONTROLS, bump, generations
from adapters_mysql.compiled_reads import CompiledRead
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.schema import memory_control
from adapters_mysql.unit_of_work import reading, writing
from memorybank_core import EVERYONE, Control, ControlStore, SubjectKind

_ORDER = sa.case(
    {SubjectKind.ALL.value: 0, SubjectKind.ORG.value: 1, SubjectKind.USER.value: 2}, value=memory_control.c.kind
)


def _subject(kind: SubjectKind, subject_id: str | sa.BindParameter[str]) -> sa.ColumnElement[bool]:
    return sa.and_(memory_control.c.kind == kind.value, memory_control.c.subject_id == subject_id)


#: What one request reads, built once: the user's, the organization's and everyone's controls.
_FIND = CompiledRead(
    sa.select(memory_control).where(
        sa.or_(
            _subject(SubjectKind.USER, sa.bindparam("user_id")),
            _subject(SubjectKind.ORG, sa.bindparam("org_id")),
            _subject(SubjectKind.ALL, EVERYONE),
        )
    )
)
#: The settings a change may carry; None leaves a stored one as it is.
_SETTINGS = ("enabled", "max_memories", "max_characters")
#: Bound as the organization when there is none: no control has an empty subject (`clean_subject_id`).
_NO_ORGANIZATION = ""
#: How many callers' controls a worker remembers (least recently used ones go first).
REMEMBERED_CALLERS = 10_000


class SqlControlStore(ControlStore):
    """The `ControlStore` port over SQLAlchemy Core."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        self._remembered: OrderedDict[tuple[str, str], tuple[int, tuple[Control, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def find(self, *, user_id: str, org_id: str | None) -> Sequence[Control]:
        key = (user_id, _NO_ORGANIZATION if org_id is None else org_id)
        generation = generations(self._engine).controls
        with self._lock:
            remembered = self._remembered.get(key)
            if remembered is not None and remembered[0] == generation:
                self._remembered.move_to_end(key)
                return remembered[1]
        parameters = {"user_id": key[0], "org_id": key[1]}
        with unavailable_on_driver_error("controls"), reading(self._engine) as connection:
            found = tuple(_control(row) for row in _FIND.all(connection, parameters))
        with self._lock:
            # Read after the counter: a change committed in between bumps it, so this is re-read next time.
            self._remembered[key] = (generation, found)
            self._remembered.move_to_end(key)
            while len(self._remembered) > REMEMBERED_CALLERS:
                self._remembered.popitem(last=False)
        return found

    def set(self, change: Control) -> Control:
        if change.updated_at is None:
            raise ValueError("a control change carries its time")
        values: dict[str, object] = {name: value for name in _SETTINGS if (value := getattr(change, name)) is not None}
        values["updated_at"] = change.updated_at
        subject = _subject(change.kind, change.subject_id)
        insert = memory_control.insert().values(kind=change.kind.value, subject_id=change.subject_id, **values)
        try:
            return self._upsert(subject, values, insert)
        except sa.exc.IntegrityError:
            # Another operator created the same control between our update and insert (InnoDB mostly
            # makes that a deadlock, retried above us; READ COMMITTED does not): it exists now, so the
            # second attempt updates it.
            return self._upsert(subject, values, insert)

    def _upsert(self, subject: sa.ColumnElement[bool], values: dict[str, object], insert: sa.Insert) -> Control:
        with unavailable_on_driver_error("controls"), writing(self._engine) as connection:
            if connection.execute(memory_control.update().where(subject).values(**values)).rowcount == 0:
                connection.execute(insert)
            row = connection.execute(sa.select(memory_control).where(subject)).one()
            bump(connection, CONTROLS)
        return _control(row)

    def clear(self, *, kind: SubjectKind, subject_id: str) -> bool:
        with unavailable_on_driver_error("controls"), writing(self._engine) as connection:
            cleared = bool(connection.execute(memory_control.delete().where(_subject(kind, subject_id))).rowcount)
            bump(connection, CONTROLS)
        return cleared

    def unset_quota(self, *, kind: SubjectKind, subject_id: str, at: datetime) -> bool:
        subject = _subject(kind, subject_id)
        has_quota = sa.or_(memory_control.c.max_memories.is_not(None), memory_control.c.max_characters.is_not(None))
        with unavailable_on_driver_error("controls"), writing(self._engine) as connection:
            unset = connection.execute(
                memory_control.update()
                .where(subject, has_quota)
                .values(max_memories=None, max_characters=None, updated_at=at)
            ).rowcount
            # In the same transaction: a control with nothing left set is no control.
            connection.execute(memory_control.delete().where(subject, memory_control.c.enabled.is_(None)))
            bump(connection, CONTROLS)
        return bool(unset)

    def list(self) -> Sequence[Control]:
        with unavailable_on_driver_error("controls"), reading(self._engine) as connection:
            rows = connection.execute(sa.select(memory_control).order_by(_ORDER, memory_control.c.subject_id)).all()
        return [_control(row) for row in rows]


def _control(row: Any) -> Control:
    return Control(
        kind=SubjectKind(row.kind),
        subject_id=row.subject_id,
        enabled=None if row.enabled is None else bool(row.enabled),
        max_memories=row.max_memories,
        max_characters=row.max_characters,
        updated_at=row.updated_at,
    )
