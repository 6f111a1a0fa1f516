"""A private MariaDB server for tests that must read the server's own files (never the shared server's).

`PrivateMariadb` initializes a data directory under a temporary directory, starts `mariadbd` on a
free port, and stops it by its PID. Without the MariaDB server binaries the test skips, and fails
under CI=true (see tests/mysql_server.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from harness.ci import in_ci

_CONFIG = """[mysqld]
datadir={data}
socket={base}/mariadb.sock
pid-file={base}/mariadb.pid
log-error={base}/error.log
port={port}
bind-address=127.0.0.1
user={user}
innodb_buffer_pool_size=64M
innodb_log_file_size=48M
performance_schema=OFF
skip-name-resolve
skip-log-bin
character-set-server=utf8mb4
collation-server=utf8mb4_unicode_ci
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _require(binary: str) -> str:
    found = shutil.which(binary) or (f"/usr/sbin/{binary}" if Path(f"/usr/sbin/{binary}").exists() else None)
    if found is None:
        message = f"{binary} is not installed (apt-get install mariadb-server)"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


class PrivateMariadb:
    """A mariadbd of our own: its data directory, its port, its process."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.data = base / "data"
        self.port = _free_port()
        self.config = base / "my.cnf"
        user = "root" if os.geteuid() == 0 else os.environ.get("USER", "nobody")
        self.config.write_text(_CONFIG.format(data=self.data, base=base, port=self.port, user=user))
        install = _require("mariadb-install-db")
        server = _require("mariadbd")
        subprocess.run(  # noqa: S603 - fixed arguments, our own paths
            [
                install,
                f"--defaults-file={self.config}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            check=True,
            capture_output=True,
        )
        self._process = subprocess.Popen(  # noqa: S603 - fixed arguments, our own paths
            [server, f"--defaults-file={self.config}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        # PyMySQL, of the test extra: the README's install has no mysqlclient.
        self.url = f"mysql+pymysql://root@127.0.0.1:{self.port}/canary"
        self._wait_until_up()

    def _wait_until_up(self) -> None:
        engine = sa.create_engine(f"mysql+pymysql://root@127.0.0.1:{self.port}", poolclass=sa.pool.NullPool)
        deadline = time.monotonic() + 60
        try:
            while True:
                try:
                    with engine.begin() as connection:
                        connection.exec_driver_sql(
                            "CREATE DATABASE IF NOT EXISTS canary CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
                        )
                    return
                except sa.exc.OperationalError:
                    if self._process.poll() is not None or time.monotonic() > deadline:
                        log = (self.base / "error.log").read_text(errors="replace")[-2000:]
                        raise RuntimeError(f"the private mariadbd did not start:\n{log}") from None
                    time.sleep(0.3)
        finally:
            engine.dispose()

    def stop(self) -> None:
        """Shut the server down cleanly (pages flushed to the tablespace files) and wait for it."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
