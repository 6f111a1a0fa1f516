"""The shard-locality check: every statement on a sharded table binds exactly one user.

The sharded tables are derived from the schema (every table with a `user_id`, except the
unsharded ones named in `adapters_mysql.spider`), so a table a later revision adds is covered
without touching this file. The cycle drives every statement the bank sends on them: the use
cases (save, search, list, delete, a refused delete of someone else's memory), and the admin
paths that write or read per user (import, export). It runs on SQLite, MariaDB and a Spider head,
with lexical search and with hybrid search (`searching`), whose vectors live in `memory_vector`.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from adapters_mysql import SqlStorage
from adapters_mysql.schema import metadata
from adapters_mysql.spider import is_sharded
from memorybank import composition, portability
from memorybank_core import ORG_READ_SCOPE, ORG_WRITE_SCOPE, EditRequest, NotFoundError, SaveRequest, org_bank_owner
from memorybank_core.bodies import JsonValue
from tests.conftest import User, start_clock
from tests.contract.embedders import HashedTermsEmbedder
from tests.sql.backends import bank_on, storage_at, url_of
from tests.sql.conftest import Statement

#: Every table sharded by user_id, from the schema.
SHARDED_TABLES = sorted(
    table.name for table in metadata.sorted_tables if is_sharded(table.name, [column.name for column in table.c])
)
_NAMES = "|".join(SHARDED_TABLES)
#: A statement that touches a sharded table (FTS5's own tables are reached through their join).
_TOUCHES_SHARDED = re.compile(rf"\b({_NAMES})\b")
#: The owner predicate as SQLAlchemy renders it, with either driver's placeholder.
_OWNER_PREDICATE = re.compile(rf"\b({_NAMES})\.user_id = (%s|\?)")
_SCOPE_PREDICATE = re.compile(r"\bmemory\.scope = (%s|\?)")
_INSERT = re.compile(rf"^INSERT INTO ({_NAMES}) \(([^)]*)\)")


#: The search modes the owner checks run under (`searching`).
SEARCH_MODES = ("lexical", "hybrid")


@contextmanager
def searching(storage: SqlStorage, mode: str) -> Iterator[SqlStorage]:
    """The session's storage for lexical search; for hybrid, the same database opened again by the composition
    root with an embedder (search is chosen at construction), closed after the block."""
    if mode != "hybrid":
        yield storage
        return
    with storage_at(url_of(storage), embedder=HashedTermsEmbedder()) as hybrid:
        yield hybrid


def vector_statement_kinds(statements: list[Statement]) -> set[str]:
    """The kinds of statement (INSERT, SELECT, ...) sent on hybrid search's vectors: what the check covered."""
    return {s.sql.split()[0] for s in statements if re.search(r"\bmemory_vector\b", s.sql)}


def queries(statements: list[Statement]) -> list[Statement]:
    """The statements that touch a sharded table (not BEGIN and the like)."""
    return [s for s in statements if _TOUCHES_SHARDED.search(s.sql)]


def _import_line(user: User, content: str) -> str:
    return json.dumps(
        {"user_id": user.user_id, "org_id": user.organization_id, "content": content, "contexts": [{"snippet": "s"}]}
    )


def check_every_statement_carries_one_owner(storage: SqlStorage, statements: list[Statement]) -> None:
    """Drive every per-user statement with two users; fail on any that binds no single owner."""
    assert {"memory", "memory_context"} <= set(SHARDED_TABLES)
    alice, bob = User(), User()
    bank = bank_on(storage)
    contexts = [{"snippet": "from the harbor chat", "conversation_id": "c1"}, {"snippet": "second"}]
    saved = [
        bank.save(alice, SaveRequest.parse({"content": f"lighthouse note {n}", "contexts": contexts})) for n in "abc"
    ]
    theirs = bank.save(bob, JsonValue({"content": "lighthouse of bob"}))
    assert {r.memory.id for r in bank.search(alice, query="lighthouse")} == {m.id for m in saved}
    first = bank.list(alice, limit=2)
    assert first.next_cursor is not None
    bank.list(alice, limit=2, cursor=first.next_cursor)
    # Memories that change: an edit, a save that supersedes, a restore, the history, the list of retired ones.
    bank.edit(
        alice,
        memory_id=saved[1].id,
        request=EditRequest.parse({"content": "lighthouse note b, corrected", "contexts": []}),
    )
    replacing = bank.save(alice, SaveRequest.parse({"content": "lighthouse note d", "supersedes": [saved[2].id]}))
    bank.edit(alice, memory_id=saved[2].id, request=EditRequest.parse({"retired": False}))
    assert len(bank.revisions(alice, memory_id=saved[2].id).revisions) == 3
    bank.list(alice, include="retired")
    bank.delete(alice, memory_id=replacing.id)
    bank.delete(alice, memory_id=saved[0].id)
    with pytest.raises(NotFoundError):
        bank.delete(alice, memory_id=theirs.id)
    # Lines of two users, interleaved: each batch (one transaction) must still hold one user.
    lines = [_import_line(user, f"imported {n}") for n in range(3) for user in (alice, bob)]
    report = portability.import_lines(lines, storage.store)
    assert report.imported == len(lines), report.skipped
    assert portability.export_user(storage.store, alice.user_id, io.StringIO()) == 2 + 3

    touching = queries(statements)
    kinds = {s.sql.split()[0] for s in touching}
    # UPDATE: the usage ledger (adapters_mysql.usage), charged by each save and credited by each delete.
    assert kinds == {"INSERT", "SELECT", "DELETE", "UPDATE"}, "the cycle must exercise every kind of statement"
    for statement in touching:
        owners = [u.user_id for u in (alice, bob) if statement.binds(u.user_id)]
        assert len(owners) == 1, f"binds no single owner: {statement.sql}"
        insert = _INSERT.match(statement.sql)
        if insert is not None:
            assert "user_id" in insert.group(2).split(", "), statement.sql
            continue
        assert _OWNER_PREDICATE.search(statement.sql), f"no owner predicate: {statement.sql}"
        if re.search(r"\bFROM memory\b|\bJOIN memory\b", statement.sql):
            assert _SCOPE_PREDICATE.search(statement.sql), f"no scope predicate: {statement.sql}"


#: The one statement of a purge that reads across owners: the organization purge's walk of the users
#: who saved under it (ids only). Every statement it leads to is bound to one of those users.
#: The statements of a person's purge bound to that person as the author (`memory.author_id`, across the banks):
#: the receipt's count of the team memories they wrote, and the marking of those as by a former member.
_AUTHORED_COUNT = re.compile(
    r"^SELECT count\(\*\) AS count_1\s+FROM memory\s+WHERE memory\.scope = (%s|\?) AND memory\.author_id = (%s|\?)$"
)
_AUTHORED_MARK = re.compile(
    r"^(SELECT memory\.id\s+FROM memory|UPDATE memory SET author_former_member=(%s|\?))\s+"
    r"WHERE memory\.scope = (%s|\?) AND memory\.author_id = (%s|\?) AND memory\.author_former_member IS NULL\b"
)
_ORGANIZATION_WALK = re.compile(r"^SELECT DISTINCT memory\.user_id\s+FROM memory\s+WHERE memory\.org_id = (%s|\?)")


def check_purge_statements_carry_one_owner(storage: SqlStorage, statements: list[Statement]) -> None:
    """Purge one user, then one organization of two users (and its shared bank), beside bystanders; every
    statement on a sharded table binds exactly one owner (the organization walk aside), and every statement that
    deletes binds the owner with an equality predicate: none can reach a bystander's rows."""
    organization = User().organization_id
    alice, bob, carol = User(organization_id=organization), User(organization_id=organization), User()
    bystander = User()
    bank = bank_on(storage)
    for user in (alice, bob, carol, bystander):
        for n in range(3):
            bank.save(user, SaveRequest.parse({"content": f"note {n}", "contexts": [{"snippet": "s"}]}))
    member = User(user_id=alice.user_id, organization_id=organization, scopes=alice.scopes | {ORG_WRITE_SCOPE})
    bank.save(member, SaveRequest.parse({"content": "team note", "contexts": [{"snippet": "s"}], "bankScope": "org"}))
    carols = User(user_id=carol.user_id, organization_id=carol.organization_id, scopes=member.scopes | {ORG_READ_SCOPE})
    bank.save(carols, SaveRequest.parse({"content": "carol's team note", "bankScope": "org"}))
    offboarding = composition.build_offboarding(storage.purge_store, clock=start_clock())
    statements.clear()
    offboarding.purge_user(carol.user_id, batch_size=2)
    by_user = list(statements)
    statements.clear()
    offboarding.purge_organization(organization, batch_size=2)
    by_organization = list(statements)

    # The organization's walk reaches its members' personal memories and its shared bank, an owner of its own.
    team_bank = org_bank_owner(organization)
    for touching, owners in (
        (queries(by_user), [carol.user_id]),
        (queries(by_organization), [alice.user_id, bob.user_id, team_bank]),
    ):
        kinds = {s.sql.split()[0] for s in touching}
        assert kinds == ({"SELECT", "DELETE", "UPDATE"} if owners == [carol.user_id] else {"SELECT", "DELETE"}), kinds
        for statement in touching:
            assert not statement.binds(bystander.user_id), statement.sql
            if _ORGANIZATION_WALK.match(statement.sql):
                assert statement.binds(organization), statement.sql
                continue
            if _AUTHORED_COUNT.match(statement.sql) or _AUTHORED_MARK.match(statement.sql):
                # The receipt's count of the team memories a purged person wrote: a count, bound to that person.
                assert statement.binds(carol.user_id), statement.sql
                continue
            bound = [owner for owner in owners if statement.binds(owner)]
            assert len(bound) == 1, f"binds no single owner: {statement.sql}"
            assert _OWNER_PREDICATE.search(statement.sql), f"no owner predicate: {statement.sql}"
            if re.search(r"\bFROM memory\b|\bJOIN memory\b", statement.sql):
                assert _SCOPE_PREDICATE.search(statement.sql), f"no scope predicate: {statement.sql}"
    # Credentials: revoked by the subject's id, with an equality predicate, never a pattern.
    for statement in by_user + by_organization:
        if re.match(r"^(UPDATE|DELETE)\b", statement.sql):
            assert " LIKE " not in statement.sql.upper(), statement.sql
            assert re.search(r"\.?(user_id|org_id|id) = (%s|\?)", statement.sql), statement.sql
    assert len(bank.list(bystander).memories) == 3
    (kept,) = bank.list(carols, bank="org").memories  # the team's: kept, its author now a former member
    assert (kept.author, kept.author_former_member) == (carol.user_id, True)
