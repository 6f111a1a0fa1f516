"""Private MariaDB instances for the cluster tier and the topology benchmark (`migrate_command` migrates a Spider one).

Each node has its own `my.cnf`, data directory, socket and loopback port under one temporary
directory, runs as the `mysql` user (Galera's rsync state transfer fails as root), and is
stopped by its PID. The shared server on 3306 is never touched. Admin statements go through
the node's unix socket as root; the app connects over TCP as `memorybank` (a user of its own,
so a node's connections from the app can be counted).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from harness.ci import in_ci
from harness.served import free_port

APP_USER = "memorybank"
APP_PASSWORD = "memorybank-cluster-test"
DATABASE = "memorybank"
START_SECONDS = 90.0
GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so"
SPIDER_PLUGIN = "/usr/lib/mysql/plugin/ha_spider.so"
#: How long a started head may take to show its Spider engine before it is started again.
SPIDER_SECONDS = 10.0
_PACKAGE_FILES = {"galera-4": GALERA_PROVIDER, "mariadb-plugin-spider": SPIDER_PLUGIN}

#: Faster failure detection than Galera's defaults (suspect 5 s, inactive 15 s), but not as fast as
#: it goes: with a 1 s suspect timeout, the two survivors of a kill on a busy 2-core machine
#: suspected each other too, split into non-primary singletons and never became primary again.
GALERA_TIMEOUTS = (
    "evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT5S;evs.inactive_check_period=PT1S"
)

_BASE_CONFIG = """\
[mariadbd]
datadir={datadir}
socket={socket}
pid-file={directory}/mariadbd.pid
log-error={directory}/error.log
port={port}
bind-address=127.0.0.1
skip-name-resolve
innodb_buffer_pool_size=64M
innodb_log_file_size=48M
performance_schema=OFF
character-set-server=utf8mb4
collation-server=utf8mb4_unicode_ci
max_connections=200
"""


class NodeError(RuntimeError):
    """A private node failed to install, start or answer; the message carries its log's tail."""


class Node:
    """One private `mariadbd`; `start()` it, `stop()` or `kill()` it by PID."""

    def __init__(self, name: str, directory: Path, extra_config: str = "") -> None:
        self.name = name
        self.directory = directory
        self.port = free_port()
        self.datadir = directory / "data"
        self.socket = directory / "mariadbd.sock"
        self._extra_config = extra_config
        self._process: subprocess.Popen[bytes] | None = None
        directory.mkdir(parents=True)
        (directory / "my.cnf").write_text(
            _BASE_CONFIG.format(datadir=self.datadir, socket=self.socket, directory=directory, port=self.port)
            + extra_config
        )
        shutil.chown(directory, "mysql", "mysql")

    @property
    def config(self) -> Path:
        return self.directory / "my.cnf"

    def install(self) -> None:
        """Create the system tables (about a second)."""
        _run(
            [
                tool("mariadb-install-db"),
                f"--defaults-file={self.config}",
                "--user=mysql",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ]
        )

    def start(self, *extra_args: str) -> None:
        """Start `mariadbd` in the background; `wait_ready` waits for it."""
        if self._process is not None and self._process.poll() is None:
            raise NodeError(f"{self.name} is already running")
        with (self.directory / "stdout.log").open("ab") as log:
            self._process = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                [tool("mariadbd"), f"--defaults-file={self.config}", "--user=mysql", *extra_args],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout: float = START_SECONDS) -> None:
        """Wait until the node answers on its socket (and, in a Galera cluster, is synced)."""
        import MySQLdb  # here, not at the top: collecting the tests must not need the mysql extra

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise NodeError(f"{self.name} exited: {self.log_tail()}")
            try:
                if self._ready():
                    return
            except MySQLdb.Error:
                pass
            time.sleep(0.2)
        raise NodeError(f"{self.name} did not become ready within {timeout} s: {self.log_tail()}")

    def _ready(self) -> bool:
        if "wsrep_on=ON" not in self._extra_config:
            self.query("SELECT 1")
            return True
        rows = self.query("SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'")
        return bool(rows) and rows[0][1] == "Synced"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int:
        if self._process is None:
            raise NodeError(f"{self.name} was never started")
        return self._process.pid

    def kill(self) -> None:
        """kill -9: the node dies at once, mid-transaction, as in a crash."""
        if self.running:
            os.kill(self.pid, signal.SIGKILL)
            self._wait_exit(10)

    def stop(self) -> None:
        """A clean shutdown (SIGTERM), then SIGKILL if it takes longer than 30 s."""
        if not self.running:
            return
        os.kill(self.pid, signal.SIGTERM)
        try:
            self._wait_exit(30)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self._wait_exit(10)

    def _wait_exit(self, timeout: float) -> None:
        if self._process is not None:
            self._process.wait(timeout=timeout)

    def admin(self) -> Any:
        """A root connection through the node's unix socket, autocommit (mysqlclient: no stray sockets)."""
        import MySQLdb  # see wait_ready

        connection = MySQLdb.connect(unix_socket=str(self.socket), user="root", connect_timeout=2, read_timeout=60)
        connection.autocommit(True)
        return connection

    def query(self, sql: str, args: Sequence[object] | None = None) -> list[tuple[Any, ...]]:
        """Run one admin statement; its rows."""
        connection = self.admin()
        try:
            cursor = connection.cursor()
            cursor.execute(sql, args)
            rows = list(cursor.fetchall())
            cursor.close()
            return rows
        finally:
            connection.close()

    def create_app_user(self, *, database: str = DATABASE) -> None:
        """The database, and the app's TCP user with every right on it (plus root over TCP for tests)."""
        for statement in (
            f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
            f"CREATE USER IF NOT EXISTS '{APP_USER}'@'127.0.0.1' IDENTIFIED BY '{APP_PASSWORD}'",
            f"GRANT ALL PRIVILEGES ON `{database}`.* TO '{APP_USER}'@'127.0.0.1'",
            "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'",
            "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
        ):
            self.query(statement)

    def url(self, database: str = DATABASE) -> str:
        """The app's `mysql://` URL for this node."""
        return f"mysql://{APP_USER}:{APP_PASSWORD}@127.0.0.1:{self.port}/{database}"

    def status(self, name: str) -> int:
        """A global status counter (Com_select, Com_insert, …)."""
        rows = self.query("SHOW GLOBAL STATUS LIKE %s", (name,))
        return int(rows[0][1]) if rows else 0

    def log(self) -> str:
        try:
            return (self.directory / "error.log").read_text(errors="replace")
        except OSError:
            return "(no log)"

    def log_tail(self) -> str:
        return self.log()[-3000:]


def require_cluster_tools() -> None:
    """Skip the calling test (fail it under CI=true) when this machine cannot run private clusters."""
    missing = [name for name in ("mariadbd", "mariadb-install-db", "rsync") if shutil.which(name) is None]
    missing += [f"{package} ({path})" for package, path in _PACKAGE_FILES.items() if not Path(path).is_file()]
    if os.geteuid() != 0:
        missing.append("root (the nodes run as the mysql user)")
    if not missing:
        return
    message = f"the cluster tier needs {', '.join(missing)}"
    if in_ci():
        pytest.fail(f"{message}, and under CI=true cluster tests must run, not skip", pytrace=False)
    pytest.skip(f"CLUSTER TESTS SKIPPED: {message}")


def tool(name: str) -> str:
    """The full path of a MariaDB program."""
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if path is None:
        raise NodeError(f"{name} is not installed (apt-get install mariadb-server)")
    return path


def _run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)  # noqa: S603
    if result.returncode != 0:
        raise NodeError(f"{argv[0]} failed ({result.returncode}): {result.stdout[-1500:]} {result.stderr[-1500:]}")


@contextmanager
def node_directory(prefix: str) -> Iterator[Path]:
    """A temporary directory the `mysql` user can reach, removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def stopped_at_exit(nodes: Sequence[Node]) -> Iterator[None]:
    """Stop every node when the block ends, whatever happened in it."""
    try:
        yield
    finally:
        for node in nodes:
            try:
                node.stop()
            except (OSError, subprocess.TimeoutExpired):
                node.kill()


class GaleraCluster:
    """Three (or more) Galera nodes on loopback, one cluster; see `galera_cluster`."""

    def __init__(self, root: Path, size: int) -> None:
        gcomm = [free_port() for _ in range(size)]
        address = ",".join(f"127.0.0.1:{port}" for port in gcomm)
        self.nodes = [Node(f"g{n + 1}", root / f"g{n + 1}", _galera_config(n, address, gcomm[n])) for n in range(size)]

    def start(self) -> None:
        for node in self.nodes:
            node.install()
        first, *joiners = self.nodes
        first.start("--wsrep-new-cluster")
        first.wait_ready()
        first.create_app_user()
        # One joiner at a time: each receives a full copy (rsync) from a donor.
        for node in joiners:
            node.start()
            try:
                node.wait_ready()
            except NodeError:
                # Galera 4 on this machine now and then aborts a joiner's first state transfer
                # ("Application state transfer failed ... restart required"; once in about twenty
                # cluster starts under load). The joiner exits by itself; a second start of the same
                # data directory takes a fresh copy from the donor. Any other failure is the test's.
                if not _STATE_TRANSFER_FAILED.search(node.log()):
                    raise
                node.stop()
                node.start()
                node.wait_ready()

    def url(self) -> str:
        """The app's multi-host URL: every node, in order."""
        hosts = ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)
        return f"mysql://{APP_USER}:{APP_PASSWORD}@{hosts}/{DATABASE}"


_STATE_TRANSFER_FAILED = re.compile(r"state transfer failed|restart required", re.IGNORECASE)


def _galera_config(index: int, address: str, gcomm_port: int) -> str:
    ist, sst = free_port(), free_port()
    return f"""\
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider={GALERA_PROVIDER}
wsrep_cluster_name=memorybank_test
wsrep_cluster_address=gcomm://{address}
wsrep_node_name=g{index + 1}
wsrep_node_address=127.0.0.1
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:{gcomm_port};ist.recv_addr=127.0.0.1:{ist};gcache.size=64M;{GALERA_TIMEOUTS}"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:{sst}
"""


class _Deployment(Protocol):
    @property
    def nodes(self) -> list[Node]: ...

    def start(self) -> None: ...


D = TypeVar("D", bound=_Deployment)


@contextmanager
def _running(prefix: str, make: Callable[[Path], D]) -> Iterator[D]:
    """A started deployment in a temporary directory; every node stopped and the directory removed afterwards."""
    with node_directory(prefix) as root:
        deployment = make(root)
        with stopped_at_exit(deployment.nodes):
            deployment.start()
            yield deployment


def galera_cluster(size: int = 3) -> AbstractContextManager[GaleraCluster]:
    """A started Galera cluster of `size` nodes with the app's database and user."""
    return _running("memorybank-galera-", lambda root: GaleraCluster(root, size))


class SpiderCluster:
    """A Spider head over plain data nodes; the head holds no rows, only Spider definitions."""

    def __init__(self, root: Path, shards: int) -> None:
        self.head = Node("head", root / "head", "plugin-load-add=ha_spider.so\n")
        self.shards = [Node(f"dn{n + 1}", root / f"dn{n + 1}") for n in range(shards)]

    @property
    def nodes(self) -> list[Node]:
        return [self.head, *self.shards]

    def start(self) -> None:
        for node in self.nodes:
            node.install()
        # The nodes are independent: start them together, then wait for each.
        for node in self.nodes:
            node.start()
        for node in self.nodes:
            try:
                node.wait_ready()
            except NodeError as error:
                # MariaDB 10.11's Spider now and then crashes on a fresh head's first start, inside
                # spider_init_system_tables (seen once in about ten cluster starts here); a second
                # start of the same data directory comes up. Any other failure is the test's.
                if node is not self.head or "spider_init_system_tables" not in str(error):
                    raise
                node.start()
                node.wait_ready()
            node.create_app_user()
        # A head can answer before its Spider engine is there: the plugin's first start on a fresh data directory
        # may still be setting up, or have failed and left the server up without it ("Unknown storage engine
        # 'SPIDER'" at the first CREATE TABLE, once in a CI run here). Wait for the engine; failing that, start the
        # head again, as for the crash above.
        if not self._head_has_spider():
            self.head.stop()
            self.head.start()
            self.head.wait_ready()
            if not self._head_has_spider():
                raise NodeError(f"the head started without the Spider engine: {self.head.log_tail()}")
        # Defining the head's data nodes (CREATE SERVER, then FLUSH TABLES) takes these two rights.
        self.head.query(f"GRANT FEDERATED ADMIN, RELOAD ON *.* TO '{APP_USER}'@'127.0.0.1'")

    def _head_has_spider(self, timeout: float = SPIDER_SECONDS) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            rows = self.head.query("SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'SPIDER'")
            if rows and rows[0][0] in ("YES", "DEFAULT"):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)

    def shard_urls(self) -> list[str]:
        return [node.url() for node in self.shards]


def spider_cluster(shards: int = 3) -> AbstractContextManager[SpiderCluster]:
    """A started Spider head and `shards` data nodes."""
    return _running("memorybank-spider-", lambda root: SpiderCluster(root, shards))


class SingleServer:
    """One private server, for comparison with the clusters."""

    def __init__(self, root: Path) -> None:
        self.node = Node("single", root / "single")

    @property
    def nodes(self) -> list[Node]:
        return [self.node]

    def start(self) -> None:
        self.node.install()
        self.node.start()
        self.node.wait_ready()
        self.node.create_app_user()


def single_server() -> AbstractContextManager[SingleServer]:
    """A started private server with the app's database and user."""
    return _running("memorybank-single-", SingleServer)


def migrate_command(cluster: SpiderCluster) -> list[str]:
    """`memorybank migrate` for the whole deployment: data nodes first, then the head."""
    return ["migrate", "--db", cluster.head.url(), "--shards", ",".join(cluster.shard_urls())]
