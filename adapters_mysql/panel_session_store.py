"""`SqlPanelSessionStore`: the panel's sign-in links and sessions (hashes only) in the `panel_credential` table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from adapters_mysql.engines import for_writing
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.schema import panel_credential
from memorybank_core import PanelCredential, PanelCredentialKind, PanelSessionStore


class SqlPanelSessionStore(PanelSessionStore):
    """The `PanelSessionStore` port over SQLAlchemy Core.

    `end` is one conditional UPDATE, so two browsers racing with one sign-in link cannot both use it.
    """

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        self._writer = for_writing(engine)

    def add(self, credential: PanelCredential) -> None:
        row = {
            "id": credential.id,
            "kind": credential.kind.value,
            "secret_hash": credential.secret_hash,
            "user_id": credential.user_id,
            "org_id": credential.org_id,
            "scopes": sorted(credential.scopes),
            "created_at": credential.created_at,
            "expires_at": credential.expires_at,
            "ended_at": credential.ended_at,
            "made_from": credential.made_from,
        }
        with unavailable_on_driver_error("panel credential add"), self._writer.begin() as connection:
            connection.execute(panel_credential.insert(), [row])

    def find_by_hash(self, secret_hash: str) -> PanelCredential | None:
        query = sa.select(panel_credential).where(panel_credential.c.secret_hash == secret_hash)
        with unavailable_on_driver_error("panel credential lookup"), self._engine.connect() as connection:
            row = connection.execute(query).first()
        return None if row is None else _credential(row)

    def end(self, credential_id: str, *, at: datetime) -> bool:
        statement = (
            panel_credential.update()
            .where(panel_credential.c.id == credential_id, panel_credential.c.ended_at.is_(None))
            .values(ended_at=at)
        )
        with unavailable_on_driver_error("panel credential end"), self._writer.begin() as connection:
            return connection.execute(statement).rowcount == 1

    def end_all(self, *, user_id: str, at: datetime) -> int:
        return self._end_where(panel_credential.c.user_id == user_id, at)

    def end_made_from(self, *, credential_id: str, at: datetime) -> int:
        return self._end_where(panel_credential.c.made_from == credential_id, at)

    def _end_where(self, chosen: sa.ColumnElement[bool], at: datetime) -> int:
        statement = (
            panel_credential.update()
            .where(chosen, panel_credential.c.ended_at.is_(None), panel_credential.c.expires_at > at)
            .values(ended_at=at)
        )
        with unavailable_on_driver_error("panel credential revoke"), self._writer.begin() as connection:
            return int(connection.execute(statement).rowcount)


def _credential(row: sa.Row[Any]) -> PanelCredential:
    return PanelCredential(
        id=row.id,
        kind=PanelCredentialKind(row.kind),
        secret_hash=row.secret_hash,
        user_id=row.user_id,
        org_id=row.org_id,
        scopes=frozenset(row.scopes),
        created_at=row.created_at,
        expires_at=row.expires_at,
        ended_at=row.ended_at,
        made_from=row.made_from,
    )
