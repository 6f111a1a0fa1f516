"""The MySQL test-server rule: skip loudly locally, never skip under CI."""

from __future__ import annotations

import pytest

from tests.mysql_server import ENV_VAR, ThrowawayDatabase, server_url


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
    assert url.drivername == "mysql+mysqldb"
