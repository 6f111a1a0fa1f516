"""`SqlTokenStore`: the standalone server's API tokens (hashes only) in the `api_token` table."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from adapters_mysql.change_counters import REVOCATIONS, bump, generations
from adapters_mysql.engines import for_writing
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.schema import api_token
from adapters_mysql.unit_of_work import reading, writing
from memorybank_core import ApiToken, TokenStore


class SqlTokenStore(TokenStore):
    """The `TokenStore` port over SQLAlchemy Core.

    `find_by_hash` is the one lookup not scoped to a user: it is how a request finds
    its user. See docs/scaling.md for where this table lives on a sharded database.
    """

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        self._writer = for_writing(engine)

    def add(self, token: ApiToken) -> None:
        row = {
            "id": token.id,
            "token_hash": token.token_hash,
            "user_id": token.user_id,
            "org_id": token.org_id,
            "scopes": sorted(token.scopes),
            "created_at": token.created_at,
            "revoked_at": token.revoked_at,
        }
        with unavailable_on_driver_error("token add"), self._writer.begin() as connection:
            connection.execute(api_token.insert(), [row])

    def find_by_hash(self, token_hash: str) -> ApiToken | None:
        return self._one(api_token.c.token_hash == token_hash)

    def get(self, token_id: str) -> ApiToken | None:
        return self._one(api_token.c.id == token_id)

    def list(self, *, user_id: str | None) -> Sequence[ApiToken]:
        query = sa.select(api_token).order_by(api_token.c.created_at, api_token.c.id)
        if user_id is not None:
            query = query.where(api_token.c.user_id == user_id)
        with unavailable_on_driver_error("token list"), self._engine.connect() as connection:
            return [_token(row) for row in connection.execute(query)]

    def revoke(self, token_id: str, *, at: datetime) -> bool:
        statement = (
            api_token.update().where(api_token.c.id == token_id, api_token.c.revoked_at.is_(None)).values(revoked_at=at)
        )
        with unavailable_on_driver_error("token revoke"), writing(self._engine) as connection:
            if connection.execute(statement).rowcount != 1:
                return False
            count_revocation(connection)
            return True

    def revocation_generation(self) -> int:
        # Read with the controls' counter, once per request (adapters_mysql.change_counters).
        return generations(self._engine).revocations

    def _one(self, condition: sa.ColumnElement[bool]) -> ApiToken | None:
        with unavailable_on_driver_error("token lookup"), reading(self._engine) as connection:
            row = connection.execute(sa.select(api_token).where(condition)).first()
        return None if row is None else _token(row)


def count_revocation(connection: sa.Connection) -> None:
    """Bump the revocation counter in the caller's transaction: every server re-checks its cached tokens."""
    bump(connection, REVOCATIONS)


def _token(row: sa.Row[Any]) -> ApiToken:
    return ApiToken(
        id=row.id,
        token_hash=row.token_hash,
        user_id=row.user_id,
        org_id=row.org_id,
        scopes=frozenset(row.scopes),
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )
