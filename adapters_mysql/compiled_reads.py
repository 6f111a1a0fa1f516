"""The hot reads on the DBAPI cursor: compiled once per dialect, rows converted by SQLAlchemy's own types.

Every request runs the same few reads (the revocation generation, the controls, a page of memories,
search's results). Through `Connection.execute` each costs about 150 µs of SQLAlchemy's execution
path on top of the driver (measured on MariaDB: 241 µs against 96 µs for the generation read), more
than the round trip itself. A `CompiledRead` compiles its Core statement once per dialect, binds
parameters with the statement's bind processors, runs it on the unit of work's DBAPI connection, and
converts each value with the result processors of the selected columns' types: the same SQL, values
and rows, without the per-call machinery (ADR 0029).

What stays SQLAlchemy's: the transaction (the read begins the connection's transaction first, as
autobegin would, so the unit of work commits or rolls it back as before), and every failure: a
driver error re-runs the read through `Connection.execute`, which raises SQLAlchemy's wrapped error
and invalidates a lost connection (the retry layer, adapters_mysql.retrying, then reconnects).
Reads only: a re-run must be harmless. And while anything listens to the engine's cursor executions
(a host's tracing, the tests' statement capture and fault injection), the reads take
`Connection.execute`, so the listeners see every statement.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

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

    def all(self, connection: sa.Connection, parameters: Mapping[str, Any]) -> list[Any]:
        """Every row of the statement for `parameters`, read in `connection`'s transaction."""
        compiled = self._for(connection.dialect)
        if compiled is None or _watched(connection):
            return self._through_sqlalchemy(connection, parameters)
        sql, values = compiled.bind(parameters)
        if not connection.in_transaction():
            connection.begin()  # what autobegin does: the unit of work ends it as before
        dbapi = connection.dialect.loaded_dbapi
        try:
            cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            try:
                cursor.execute(sql, values)
                raw_rows = cursor.fetchall()
            finally:
                cursor.close()
        except dbapi.Error:
            # SQLAlchemy's path for every failure: its wrapped error, a lost connection invalidated.
            return self._through_sqlalchemy(connection, parameters)
        return compiled.rows(raw_rows)

    def _through_sqlalchemy(self, connection: sa.Connection, parameters: Mapping[str, Any]) -> list[Any]:
        return list(connection.execute(self.statement, dict(parameters)).all())


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
    connection: sa.Connection, inserts: Sequence[tuple[CompiledInsert, Sequence[Mapping[str, Any]]]]
) -> bool:
    """Send `inserts` (each a table's rows) as one query, one round trip, in the connection's transaction.

    Only on a `OneTripConnection` (several statements per query) that no listener watches; returns False,
    having sent nothing, elsewhere (the caller then inserts its usual way). A failure of any of them
    is SQLAlchemy's wrapped error, as for any statement; the transaction then rolls back as a whole.
    """
    if connection.dialect.driver != "mysqldb":
        return False  # (and mysqlclient, which one_trip imports, may not even be installed)
    from adapters_mysql.one_trip import OneTripConnection

    dbapi_connection = connection.connection.dbapi_connection
    if not isinstance(dbapi_connection, OneTripConnection) or _watched(connection):
        return False
    statements: list[str] = []
    values: list[Any] = []
    for insert, rows in inserts:
        if rows:
            sql, bound = insert.bind(connection.dialect, rows)
            statements.append(sql)
            values.extend(bound)
    with dbapi_connection.reading_every_result():
        connection.exec_driver_sql(";".join(statements), tuple(values))
    return True
