"""`memorybank compact` through a Galera URL: the rebuild is replicated, and every node drops the full-text entries of
the memories a purge deleted (ADR 0047), keeping every memory that stays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.clusters import DATABASE, Node, galera_cluster
from harness.served import run_memorybank
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id

pytestmark = pytest.mark.cluster

LEAVING, STAYING, ORG = new_id(USER_PREFIX), new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)


def _deleted_documents(node: Node) -> int:
    """The node's InnoDB list of deleted full-text documents of the memory table."""
    node.query(f"SET GLOBAL innodb_ft_aux_table = '{DATABASE}/memory'")
    return int(node.query("SELECT COUNT(*) FROM information_schema.INNODB_FT_DELETED")[0][0])


def test_compact_through_a_galera_url_rebuilds_the_memory_table_on_every_node(tmp_path: Path) -> None:
    lines = [{"user_id": LEAVING, "org_id": ORG, "content": f"leaving note {n}"} for n in range(20)]
    lines += [{"user_id": STAYING, "org_id": ORG, "content": f"staying kestrel note {n}"} for n in range(5)]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with galera_cluster() as cluster:
        url = cluster.url()
        migrated = run_memorybank(["migrate", "--db", url])
        assert migrated.returncode == 0, migrated.stderr
        imported = run_memorybank(["import", str(source), "--db", url])
        assert imported.returncode == 0, imported.stderr
        purged = run_memorybank(["purge", "--user", LEAVING, "--db", url])
        assert purged.returncode == 0, purged.stderr
        assert "until `memorybank compact`" in purged.stderr
        assert all(_deleted_documents(node) >= 20 for node in cluster.nodes)

        compacted = run_memorybank(["compact", "--db", url])

        assert compacted.returncode == 0, compacted.stderr
        assert compacted.stdout.startswith("memorybank: compacted the search index of 5 memories in ")
        for node in cluster.nodes:
            assert _deleted_documents(node) == 0, node.name
            kept = node.query(
                f"SELECT COUNT(*) FROM `{DATABASE}`.memory WHERE user_id = %s",  # noqa: S608 - our own name
                (STAYING,),
            )
            assert kept[0][0] == 5, node.name
