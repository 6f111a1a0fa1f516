"""Several hosts of one cluster in one `--db` URL, and moving to the next host when one is lost.

The URL form is `mysql://user:password@host1:3306,host2:3307,host3:3308/memorybank` (a port may
be left out: 3306). Every host must serve the same data (a Galera cluster, or replicas behind
a proxy that fails over). New connections go to the host that worked last ("sticky"), so the app
writes through one node at a time and Galera's certification conflicts stay rare; when that host
refuses connections, or is not ready (a Galera node outside the primary component), the next one
is tried, in the URL's order, wrapping around. A connection lost mid-statement is discarded by the
pool, and the caller's retry (`adapters_mysql.retrying`) reconnects through the same path.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL

from adapters_mysql.engines import one_trip_connect, open_dbapi_connection
from adapters_mysql.errors import driver_error_code
from memorybank_core import InvalidInputError

_log = logging.getLogger("memorybank.storage")

DEFAULT_PORT = 3306

#: Seconds to wait for one host to accept a connection before trying the next.
CONNECT_TIMEOUT_SECONDS = 3

#: "WSREP has not yet prepared node for application use": a Galera node outside the primary
#: component answers every query with this. Its connections are dropped like lost ones.
WSREP_NOT_READY = 1047


@attrs.frozen
class Host:
    """One `host:port` of a multi-host URL."""

    name: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}:{self.port}"


def split_hosts(url: str) -> tuple[str, tuple[Host, ...]]:
    """`url` with only its first host, and every host it names; one host for an ordinary URL.

    Raises:
        InvalidInputError: ("db") an empty host or a port that is not a number from 1 to 65535.
    """
    scheme, separator, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    credentials, at, host_list = authority.rpartition("@")
    if not separator or "," not in host_list:
        return url, ()
    hosts = tuple(_host(item) for item in host_list.split(","))
    first = f"{credentials}{at}{hosts[0]}"
    return f"{scheme}{separator}{first}{slash}{path}", hosts


def _host(item: str) -> Host:
    name, colon, port = item.strip().partition(":")
    if not name:
        raise InvalidInputError("db", "names an empty host in its host list (host1:3306,host2:3306)")
    if not colon:
        return Host(name, DEFAULT_PORT)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidInputError("db", f"names the host {name} with the port {port!r}, which is not from 1 to 65535")
    return Host(name, int(port))


class HostRing:
    """The hosts of one cluster, and the one new connections go to first (the last that worked)."""

    def __init__(self, hosts: tuple[Host, ...]) -> None:
        if not hosts:
            raise ValueError("a host ring needs at least one host")
        self.hosts = hosts
        self._preferred = 0
        self._lock = threading.Lock()

    def in_order(self) -> list[tuple[int, Host]]:
        """Every host, the preferred one first, then the others in the URL's order."""
        with self._lock:
            start = self._preferred
        count = len(self.hosts)
        return [((start + step) % count, self.hosts[(start + step) % count]) for step in range(count)]

    def prefer(self, index: int) -> None:
        with self._lock:
            if index != self._preferred:
                _log.warning(
                    "database host %s is unreachable; using %s", self.hosts[self._preferred], self.hosts[index]
                )
            self._preferred = index

    @property
    def preferred(self) -> Host:
        with self._lock:
            return self.hosts[self._preferred]


def fail_over_between(engine: sa.Engine, ring: HostRing) -> None:
    """Make `engine` connect to the ring's hosts in turn, and drop connections to a node that is not ready."""

    # This connect replaces the engine's own (to its one host); both open a connection the same way.
    if event.contains(engine, "do_connect", one_trip_connect):
        event.remove(engine, "do_connect", one_trip_connect)

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: sa.Dialect, _record: Any, cargs: list[Any], cparams: dict[str, Any]) -> Any:
        dbapi = dialect.loaded_dbapi
        last: Exception | None = None
        for index, host in ring.in_order():
            params = {**cparams, "host": host.name, "port": host.port, "connect_timeout": CONNECT_TIMEOUT_SECONDS}
            try:
                connection = open_dbapi_connection(dialect, cargs, params)
            except dbapi.Error as error:
                last = error
                continue
            if _ready(connection):
                ring.prefer(index)
                return connection
            connection.close()
            last = dbapi.OperationalError(WSREP_NOT_READY, f"{host} is not ready (wsrep_ready is OFF)")
        if last is None:  # pragma: no cover - a ring has at least one host
            raise RuntimeError("no database host to connect to")
        raise last

    @event.listens_for(engine, "handle_error")
    def _not_ready_is_lost(context: sa.engine.ExceptionContext) -> None:
        if driver_error_code(context.original_exception) == WSREP_NOT_READY:
            context.is_disconnect = True


def _ready(connection: Any) -> bool:
    """False for a Galera node that may not serve (outside the primary component); True elsewhere."""
    cursor = connection.cursor()
    try:
        # MariaDB reports wsrep_ready OFF when Galera is not in use at all: ask both.
        cursor.execute("SHOW GLOBAL VARIABLES LIKE 'wsrep_on'")
        wsrep_on = cursor.fetchone()
        if wsrep_on is None or str(wsrep_on[1]).upper() != "ON":
            return True
        cursor.execute("SHOW GLOBAL STATUS LIKE 'wsrep_ready'")
        ready = cursor.fetchone()
    finally:
        cursor.close()
    return ready is not None and str(ready[1]).upper() == "ON"


def display_hosts(url: URL, hosts: tuple[Host, ...]) -> str:
    """`url` (no password) with its whole host list, for messages."""
    shown = url._replace(password=None).render_as_string(hide_password=False)
    if not hosts:
        return shown
    first, _, path = shown.partition("://")[2].partition("/")
    credentials = first.rpartition("@")[0]
    prefix = f"{credentials}@" if credentials else ""
    return f"{url.drivername}://{prefix}{','.join(str(host) for host in hosts)}/{path}"
