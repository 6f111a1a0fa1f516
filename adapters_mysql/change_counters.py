"""Change counters: how many times the tokens and the controls changed, read together once per request.

Two rows of `api_token_revocations`: row 1 counts token revocations (a server trusts the tokens it
verified while it is unchanged, `memorybank_core.tokens`), row 2 counts changes to the operators'
controls (a worker trusts the controls it read while it is unchanged, `SqlControlStore`). Each is
bumped in the transaction that makes its change, so any process's change shows in every worker's
very next request. A request reads both in one statement, once per unit of work (`per_unit`): its
bearer check and its gate share that one round trip. No row yet reads as 0.
"""

from __future__ import annotations

import attrs
import sqlalchemy as sa

from adapters_mysql.compiled_reads import CompiledRead
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.schema import api_token_revocations
from adapters_mysql.unit_of_work import per_unit, reading

REVOCATIONS = 1
"""The row counting token revocations (revision 0005 made it)."""
CONTROLS = 2
"""The row counting changes to `memory_control` (made on the first change)."""

_counter = api_token_revocations.c


def _count(row_id: int) -> sa.ScalarSelect[int]:
    return sa.select(_counter.generation).where(_counter.id == row_id).scalar_subquery()


#: One statement, one row, whichever rows exist yet.
_BOTH = CompiledRead(sa.select(_count(REVOCATIONS).label("revocations"), _count(CONTROLS).label("controls")))


@attrs.frozen
class Generations:
    """The two counters as one request read them."""

    revocations: int
    controls: int


def generations(engine: sa.Engine) -> Generations:
    """Both counters: read once per unit of work (the first caller reads, the others share it), else each call.

    Raises:
        UnavailableError: the database cannot be reached.
    """
    return per_unit(engine, Generations, lambda: _read(engine))


def _read(engine: sa.Engine) -> Generations:
    with unavailable_on_driver_error("token lookup"), reading(engine) as connection:
        row = _BOTH.all(connection, {})[0]
    return Generations(revocations=int(row.revocations or 0), controls=int(row.controls or 0))


def bump(connection: sa.Connection, row_id: int) -> None:
    """Count one more change of `row_id`'s kind, in the caller's (write) transaction."""
    grow = api_token_revocations.update().where(_counter.id == row_id).values(generation=_counter.generation + 1)
    if connection.execute(grow).rowcount == 0:
        # No row yet: a database made by `create_all` (SQLite's first start), or the controls' first change.
        # Made at 0 unless a racing first change made it meanwhile, then counted like any other.
        connection.execute(
            api_token_revocations.insert()
            .values(id=row_id, generation=0)
            .prefix_with("IGNORE", dialect="mysql")
            .prefix_with("OR IGNORE", dialect="sqlite")
        )
        connection.execute(grow)
