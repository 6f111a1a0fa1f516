"""The MySQL test-server rule: skip loudly locally, never skip under CI."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from adapters_mysql import SqlStorage
from tests.mysql_server import ENV_VAR, ThrowawayDatabase, server_url
from tests.sql.backends import MysqlFactory


def test_without_a_server_url_mysql_tests_skip_locally_with_a_loud_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"MYSQL TESTS SKIPPED: set {ENV_VAR}"):
        server_url()


def test_without_a_server_url_mysql_tests_fail_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="must run, not skip"):
        server_url()


def test_an_unreachable_server_fails_rather_than_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "mysql+pymysql://root@127.0.0.1:1")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.fail.Exception, match="cannot be reached"):
        ThrowawayDatabase()


def test_the_server_url_names_no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "mysql://root@127.0.0.1:3306/somewhere")
    url = server_url()
    assert url.database is None
    assert url.drivername == "mysql"


@pytest.mark.mysql
@pytest.mark.parametrize("scheme", ["mysql", "mysql+pymysql"])
def test_a_throwaway_database_keeps_the_configured_driver(monkeypatch: pytest.MonkeyPatch, scheme: str) -> None:
    configured = server_url()  # the real server (fails under CI without one)
    monkeypatch.setenv(ENV_VAR, configured.set(drivername=scheme).render_as_string(hide_password=False))
    if scheme == "mysql":
        pytest.importorskip("MySQLdb", reason="mysql:// means mysqlclient: pip install -e '.[all,test]'")
    database = ThrowawayDatabase()
    try:
        assert database.url.startswith(f"{scheme}://")
        engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
        with engine.connect() as connection:
            assert connection.execute(sa.text("SELECT DATABASE()")).scalar() == database.name
        engine.dispose()
    finally:
        database.drop()


@pytest.mark.mysql
def test_a_factory_whose_setup_fails_drops_its_database(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[str] = []

    def failing_migrate(self: SqlStorage, **_options: object) -> None:
        created.append(str(self.engine.url.database))
        raise RuntimeError("setup failed")

    monkeypatch.setattr(SqlStorage, "migrate", failing_migrate)

    with pytest.raises(RuntimeError, match="setup failed"):
        MysqlFactory()

    admin = sa.create_engine(server_url(), poolclass=sa.pool.NullPool)
    with admin.connect() as connection:
        left = connection.execute(sa.text("SHOW DATABASES LIKE :name"), {"name": created[0]}).all()
    admin.dispose()
    assert created
    assert left == []
