"""A `--db` URL naming several hosts of one cluster: parsing, and moving past a host that is down."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from adapters_mysql.failover import Host, split_hosts
from harness.served import free_port
from memorybank_core import InvalidInputError
from tests.mysql_server import ThrowawayDatabase
from tests.sql.backends import storage_at
from tests.sql.memories import make_memory, new_user


def test_a_url_with_several_hosts_is_split_into_the_first_host_and_the_list() -> None:
    single, hosts = split_hosts("mysql://u:p%40ss@db1:3306,db2:3307,db3/memorybank?charset=utf8mb4")

    assert single == "mysql://u:p%40ss@db1:3306/memorybank?charset=utf8mb4"
    assert hosts == (Host("db1", 3306), Host("db2", 3307), Host("db3", 3306))


def test_an_ordinary_url_has_no_host_list() -> None:
    assert split_hosts("mysql://u:p@db1:3306/memorybank") == ("mysql://u:p@db1:3306/memorybank", ())


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("mysql://u:p@db1:3306,:3307/memorybank", "empty host"),
        ("mysql://u:p@db1:3306,db2:http/memorybank", "not from 1 to 65535"),
        ("mysql://u:p@db1:3306,db2:70000/memorybank", "not from 1 to 65535"),
        ("sqlite://a,b/memorybank", "only a mysql:// URL"),
    ],
)
def test_a_bad_host_list_is_refused_by_name(url: str, complaint: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        storage_at(url)
    assert raised.value.problems[0].path == "db"
    assert complaint in raised.value.problems[0].message


@pytest.mark.mysql
def test_a_host_that_refuses_connections_is_passed_over_and_named_nowhere_in_the_password(
    mariadb: ThrowawayDatabase,
) -> None:
    real = sa.make_url(mariadb.url)
    dead = free_port()
    hosts = f"127.0.0.1:{dead},{real.host}:{real.port or 3306}"
    credentials = (real.username or "") + (f":{real.password}" if real.password else "")
    storage = storage_at(f"mysql://{credentials}@{hosts}/{real.database}")
    try:
        storage.migrate()
        owner = new_user()
        memory = make_memory(owner)
        storage.store.add(user_id=owner, memory=memory)

        assert list(storage.store.get_many(user_id=owner, memory_ids=[memory.id])) == [memory.id]
        assert f"127.0.0.1:{dead},{real.host}" in storage.fix_command
    finally:
        storage.close()
