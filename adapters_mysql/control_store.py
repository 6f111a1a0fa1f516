"""`SqlControlStore`: the operators' gate switches and quotas in `memory_control`.

The bank reads the controls of each request (`find`: one primary-key lookup of at most three rows,
on the request's unit-of-work connection), so a change made by any process — `memorybank gate`,
a host's admin code — applies to every worker's next request without a restart or a cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

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


class SqlControlStore(ControlStore):
    """The `ControlStore` port over SQLAlchemy Core."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def find(self, *, user_id: str, org_id: str | None) -> Sequence[Control]:
        parameters = {"user_id": user_id, "org_id": _NO_ORGANIZATION if org_id is None else org_id}
        with unavailable_on_driver_error("controls"), reading(self._engine) as connection:
            rows = _FIND.all(connection, parameters)
        return [_control(row) for row in rows]

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
        return _control(row)

    def clear(self, *, kind: SubjectKind, subject_id: str) -> bool:
        with unavailable_on_driver_error("controls"), writing(self._engine) as connection:
            return bool(connection.execute(memory_control.delete().where(_subject(kind, subject_id))).rowcount)

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
