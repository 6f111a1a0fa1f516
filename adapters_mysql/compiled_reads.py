"""The hot reads on the DBAPI cursor: compiled once per dialect, rows converted by SQLAlchemy's own types.

Every request runs the same few reads (the revocation generation, the controls, a page of memories,
search's results). Through `Connection.execute` each costs about 150 µs of SQLAlchemy's execution
path on top of the driver (measured on MariaDB: 241 µs against 96 µs for the generation read), more
than the round trip itself. A `CompiledRead` compiles its Core statement once per dialect, binds
parameters with the statement's bind processors, runs it on the unit of work's DBAPI connection, and
converts each value with the result processors of the selected columns' types: the same SQL, values
and rows, without the per-call machinery (ADR 0029).

A read may also carry others in its round trip (`along`: hybrid search's candidates carry the owner's
vectors, which it reads next), and a save's writes may end with their `COMMIT` and reads
(`insert_together`'s `then_read`: its `similar` look-up's candidates, ADR 0042): their rows are kept in
the unit of work, and the next `all` of the same read with the same values takes them instead of
asking the server (`adapters_mysql.unit_of_work.take_ahead`).

What stays SQLAlchemy's: the transaction (the read begins the connection's transaction first, as
autobegin would, so the unit of work commits or rolls it back as before), and every failure: a
driver error re-runs the read through `Connection.execute`, which raises SQLAlchemy's wrapped error
and invalidates a lost connection (the retry layer, adapters_mysql.retrying, then reconnects).
Reads only: a re-run must be harmless. And while anything listens to the engine's cursor executions
(a host's tracing, the tests' statement capture and fault injection), the reads take
`Connection.execute`, so the listeners see every statement.
"""

from __future__ import annotations

import logging
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import sqlalchemy as sa

from adapters_mysql.unit_of_work import keep_ahead, take_ahead

_log = logging.getLogger("memorybank.storage")

_PLACEHOLDERS = {"format": "%s", "qmark": "?"}
"""The DBAPI paramstyles compiled here: mysqlclient's and sqlite3's."""

_Processor = Callable[[Any], Any]
AnySelect = sa.Select[*tuple[Any, ...]]
"""A SELECT of any columns."""


class _Compiled:
    """One statement compiled for one dialect: its SQL, how to bind, how to convert a row."""

    def __init__(self, statement: AnySelect, dialect: sa.Dialect, expanding: str | None) -> None:
        compiled = statement.compile(dialect=dialect)
        self.sql: str = compiled.string
        self.placeholder = _PLACEHOLDERS[dialect.paramstyle]
        self.expanding = expanding
        self.names: list[str] = list(compiled.positiontup or ())
        self.defaults: dict[str, Any] = dict(compiled.params)
        self.bind_processors: dict[str, _Processor] = {}
        for name in set(self.names):
            processor = compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
            if processor is not None:
                self.bind_processors[name] = processor
        columns = list(statement.selected_columns)
        # Fields known only here; rows are read by attribute, as SQLAlchemy's are.
        self.row: Any = namedtuple("Row", statement.selected_columns.keys())  # type: ignore[misc]
        self.result_processors: list[tuple[int, _Processor]] = []
        for index, column in enumerate(columns):
            processor = column.type.dialect_impl(dialect).result_processor(dialect, None)
            if processor is not None:
                self.result_processors.append((index, processor))

    def bind(self, parameters: Mapping[str, Any]) -> tuple[str, list[Any]]:
        """The SQL for these parameters (an expanding list spelled out) and its positional values."""
        sql = self.sql
        values: list[Any] = []
        for name in self.names:
            value = parameters[name] if name in parameters else self.defaults[name]
            processor = self.bind_processors.get(name)
            if name == self.expanding:
                items = [processor(item) for item in value] if processor is not None else list(value)
                values.extend(items)
                continue
            values.append(processor(value) if processor is not None else value)
        if self.expanding is not None:
            count = len(parameters[self.expanding])
            sql = sql.replace(f"__[POSTCOMPILE_{self.expanding}]", ", ".join([self.placeholder] * count))
        return sql, values

    def rows(self, raw_rows: Sequence[Sequence[Any]]) -> list[Any]:
        """Driver rows as named rows of converted values."""
        make = self.row._make
        processors = self.result_processors
        if not processors:
            return [make(raw) for raw in raw_rows]
        rows = []
        for raw in raw_rows:
            values = list(raw)
            for index, processor in processors:
                values[index] = processor(values[index])
            rows.append(make(values))
        return rows


class CompiledRead:
    """A Core SELECT run on the DBAPI cursor of a SQLAlchemy connection; rows with attribute access by column key.

    `expanding` names the statement's one `bindparam(..., expanding=True)`, if it has one; it must
    not be empty when called.
    """

    def __init__(self, statement: AnySelect, *, expanding: str | None = None) -> None:
        self.statement = statement
        self._expanding = expanding
        self._compiled: dict[str, _Compiled | None] = {}

    def _for(self, dialect: sa.Dialect) -> _Compiled | None:
        key = f"{dialect.name}+{dialect.driver}"
        if key not in self._compiled:
            supported = dialect.paramstyle in _PLACEHOLDERS
            self._compiled[key] = _Compiled(self.statement, dialect, self._expanding) if supported else None
        return self._compiled[key]

    def all(
        self, connection: sa.Connection, parameters: Mapping[str, Any], *, along: Sequence[PlannedRead] = ()
    ) -> list[Any]:
        """Every row of the statement for `parameters`, read in `connection`'s transaction.

        Rows the unit of work read ahead for this read and these values are taken instead (`along`,
        `insert_together`). `along`: reads sent in the same round trip where the connection takes several
        statements per query (mysqlclient, `OneTripConnection`), their rows kept for the unit's next `all` of
        each; elsewhere, or when one fails, nothing is kept and each is read when asked.
        """
        ahead: list[Any] | None = take_ahead(connection.engine, self.key(parameters))
        if ahead is not None:
            return ahead
        compiled = self._for(connection.dialect)
        if compiled is None or _watched(connection):
            return self._through_sqlalchemy(connection, parameters)
        sql, values = compiled.bind(parameters)
        along = along if _several_per_query(connection) else ()
        bound = [planned.read.bind(connection.dialect, planned.parameters) for planned in along]
        if not connection.in_transaction():
            connection.begin()  # what autobegin does: the unit of work ends it as before
        dbapi = connection.dialect.loaded_dbapi
        try:
            cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            try:
                cursor.execute(
                    ";".join([sql, *(other_sql for other_sql, _ in bound)]),
                    [*values, *(value for _, other_values in bound for value in other_values)],
                )
                raw_rows = cursor.fetchall()
                _keep_along(connection, cursor, along)
            finally:
                cursor.close()
        except dbapi.Error:
            # SQLAlchemy's path for every failure: its wrapped error, a lost connection invalidated.
            return self._through_sqlalchemy(connection, parameters)
        return compiled.rows(raw_rows)

    def key(self, parameters: Mapping[str, Any]) -> tuple[object, ...]:
        """What the unit keeps this read's rows for `parameters` under, when read ahead."""
        return (self, *sorted((name, tuple(v) if isinstance(v, list) else v) for name, v in parameters.items()))

    def bind(self, dialect: sa.Dialect, parameters: Mapping[str, Any]) -> tuple[str, list[Any]]:
        """The driver SQL and positional values of this read for `parameters` (a dialect it compiles for)."""
        compiled = self._for(dialect)
        if compiled is None:
            raise ValueError(f"no compiled reads for {dialect.name}+{dialect.driver}")
        return compiled.bind(parameters)

    def convert(self, dialect: sa.Dialect, raw_rows: Sequence[Sequence[Any]]) -> list[Any]:
        """Driver rows of this read as `all` returns them."""
        compiled = self._for(dialect)
        assert compiled is not None  # noqa: S101 - bound (`bind`) before its rows come back
        return compiled.rows(raw_rows)

    def _through_sqlalchemy(self, connection: sa.Connection, parameters: Mapping[str, Any]) -> list[Any]:
        return list(connection.execute(self.statement, dict(parameters)).all())


@attrs.frozen
class PlannedRead:
    """A `CompiledRead` and the values it will be run with: sent ahead, in a round trip already going to the
    server, for the unit of work's next `all` of the same read and values to take."""

    read: CompiledRead
    parameters: Mapping[str, Any]


def _keep_along(connection: sa.Connection, cursor: Any, along: Sequence[PlannedRead]) -> None:
    """Keep the rows of `along`, the statements after the cursor's first, in the unit of work."""
    try:
        for planned in along:
            if not cursor.nextset():
                return
            rows = planned.read.convert(connection.dialect, cursor.fetchall())
            keep_ahead(connection.engine, planned.read.key(planned.parameters), rows)
    except connection.dialect.loaded_dbapi.Error as error:
        # The first read's rows stand; the others are read when asked.
        _log.warning("a read sent along failed (%s): read again when asked", type(error).__name__)


def _several_per_query(connection: sa.Connection) -> bool:
    """Whether `connection` takes several statements per query: a `OneTripConnection` no listener watches."""
    if connection.dialect.driver != "mysqldb":
        return False  # (and mysqlclient, which one_trip imports, may not even be installed)
    from adapters_mysql.one_trip import OneTripConnection

    return isinstance(connection.connection.dbapi_connection, OneTripConnection) and not _watched(connection)


def _watched(connection: sa.Connection) -> bool:
    """Whether a listener wants to see this connection's cursor executions."""
    dispatch = connection.dispatch
    return bool(dispatch.before_cursor_execute or dispatch.after_cursor_execute)


class CompiledInsert:
    """An INSERT of rows into one table, as driver SQL and positional values: compiled once per dialect and set
    of columns, the rows' VALUES tuples repeated, each value bound by its column type's bind processor.

    For statements sent several at once in one round trip (`insert_together`); SQLAlchemy's own
    `insert()` stays the path everywhere else.
    """

    def __init__(self, table: sa.Table) -> None:
        self.table = table
        self._compiled: dict[tuple[str, tuple[str, ...]], tuple[str, str, list[tuple[str, _Processor | None]]]] = {}

    def bind(self, dialect: sa.Dialect, rows: Sequence[Mapping[str, Any]]) -> tuple[str, list[Any]]:
        """The SQL inserting `rows` (at least one, all with the same keys) and its values in order."""
        keys = tuple(rows[0])
        cache_key = (f"{dialect.name}+{dialect.driver}", keys)
        if cache_key not in self._compiled:
            compiled = self.table.insert().compile(dialect=dialect, column_keys=list(keys))
            head, _, values = compiled.string.partition(" VALUES ")
            names = list(compiled.positiontup or ())
            processors: list[tuple[str, _Processor | None]] = [
                (name, compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)) for name in names
            ]
            self._compiled[cache_key] = (head, values, processors)
        head, values_sql, bound_by = self._compiled[cache_key]
        bound: list[Any] = []
        for row in rows:
            bound.extend(row[name] if processor is None else processor(row[name]) for name, processor in bound_by)
        return f"{head} VALUES {', '.join([values_sql] * len(rows))}", bound


def insert_together(
    connection: sa.Connection,
    inserts: Sequence[tuple[CompiledInsert, Sequence[Mapping[str, Any]]]],
    *,
    then_read: Sequence[PlannedRead] = (),
) -> bool:
    """Send `inserts` (each a table's rows) as one query, one round trip, in the connection's transaction.

    With `then_read`, the same query also commits the transaction and then runs those reads, whose rows
    the unit of work keeps for its next `CompiledRead.all` of each (ADR 0042): the caller's transaction is
    over when this returns (its own commit then sends nothing), so nothing may be written after it. A
    read that fails after the commit keeps nothing and raises nothing.

    Only on a `OneTripConnection` (several statements per query) that no listener watches; returns False,
    having sent nothing, elsewhere (the caller then inserts its usual way). A failure of any insert, or of
    the commit, is SQLAlchemy's wrapped error, as for any statement; the transaction then rolls back as a
    whole.
    """
    if not _several_per_query(connection):
        return False
    dbapi_connection = connection.connection.dbapi_connection
    assert dbapi_connection is not None  # noqa: S101 - `_several_per_query` looked at it
    statements: list[str] = []
    values: list[Any] = []
    for insert, rows in inserts:
        if rows:
            sql, bound = insert.bind(connection.dialect, rows)
            statements.append(sql)
            values.extend(bound)
    if not then_read:
        with dbapi_connection.reading_every_result():
            connection.exec_driver_sql(";".join(statements), tuple(values))
        return True
    statements.append("COMMIT")
    for planned in then_read:
        sql, bound = planned.read.bind(connection.dialect, planned.parameters)
        statements.append(sql)
        values.extend(bound)
    with dbapi_connection.committing_then_reading(len(statements) - len(then_read), len(then_read)) as plan:
        connection.exec_driver_sql(";".join(statements), tuple(values))
    for planned, rows in zip(then_read, plan.rows, strict=True):
        if rows is not None:
            converted = planned.read.convert(connection.dialect, rows)
            keep_ahead(connection.engine, planned.read.key(planned.parameters), converted)
    return True
