"""The Vitess/PlanetScale VSchema in docs/scaling.md, checked against the schema it must shard.

Vitess cannot run on these machines (it needs MySQL 8), so the VSchema is checked statically:
every table the schema defines is in exactly one keyspace; every table of the sharded keyspace
has a `user_id` column and routes by it; the unsharded keyspace holds the rest, as the Spider
deployment does (adapters_mysql.spider), so both sharded shapes split the tables alike.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from adapters_mysql.revisions import VERSION_TABLE
from adapters_mysql.schema import metadata
from adapters_mysql.spider import SHARD_KEY, is_sharded

SCALING = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"


def _vschemas() -> list[dict[str, Any]]:
    blocks = re.findall(r"```json\n(.*?)```", SCALING.read_text(), flags=re.DOTALL)
    return [json.loads(block) for block in blocks if '"sharded"' in block]


def _keyspace(sharded: bool) -> dict[str, Any]:
    # The first VSchema of each kind is the recommended one; later ones are alternatives.
    return next(vschema for vschema in _vschemas() if vschema["sharded"] is sharded)


def _columns(table: str) -> list[str]:
    return [column.name for column in metadata.tables[table].c]


def test_every_table_of_the_schema_is_in_exactly_one_keyspace() -> None:
    sharded, unsharded = set(_keyspace(True)["tables"]), set(_keyspace(False)["tables"])

    assert sharded.isdisjoint(unsharded)
    assert sharded | unsharded == {*metadata.tables, VERSION_TABLE}


def test_every_sharded_table_has_user_id_and_routes_by_it_with_a_declared_vindex() -> None:
    keyspace = _keyspace(True)
    for table, spec in keyspace["tables"].items():
        assert SHARD_KEY in _columns(table), table
        (primary, *_others) = spec["column_vindexes"]
        assert primary["column"] == SHARD_KEY, table
        assert keyspace["vindexes"][primary["name"]]["type"] == "xxhash", table


def test_the_vschema_shards_the_tables_the_spider_head_shards() -> None:
    sharded = set(_keyspace(True)["tables"])

    assert sharded == {name for name in metadata.tables if is_sharded(name, _columns(name))}
