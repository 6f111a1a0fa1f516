"""Import, export and the admin commands' work over the core's ports alone: the in-memory adapters, no SQL.

What a host with its own store relies on (docs/portability.md): `memorybank.portability` and the
commands' work take ports (`MemoryStore`, `BulkMemoryWriter`, `MemoryOwners`, `StoragePorts`), not
memorybank's SQL storage. The SQL round trip is tests/sql/test_portability.py.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from adapters_secrets import DetectSecretsScreen
from memorybank import bootstrap
from memorybank.commands import secrets
from memorybank.commands.base import CommandError
from memorybank.portability import export_org, export_user, import_file, import_lines, memory_line, parse_line
from memorybank_core import (
    ORG_READ_SCOPE,
    ORG_WRITE_SCOPE,
    READ_SCOPE,
    WRITE_SCOPE,
    ControlStore,
    EditRequest,
    InMemoryControlStore,
    InMemoryPanelSessionStore,
    InMemoryStore,
    InMemoryTokenStore,
    InvalidInputError,
    Memory,
    MemoryStore,
    NoUnitOfWork,
    PanelSessionStore,
    Scope,
    SearchEngine,
    SubjectKind,
    TokenStore,
    UnitOfWork,
    limits,
)
from memorybank_core.banks import org_bank_owner
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, new_id
from memorybank_core.wire import EXPORT_TIMESPEC, memory_json
from memorybank_search import InMemorySearch, OwnerIndexer
from memorybank_testing import User
from tests.sql.memories import make_memory, new_user

NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)
USER, ORG = new_user(), new_id(ORGANIZATION_PREFIX)


def line(**fields: object) -> str:
    base: dict[str, object] = {"user_id": USER, "org_id": ORG, "content": "a memory"}
    base.update(fields)
    return json.dumps({key: value for key, value in base.items() if value is not None})


def exported(store: MemoryStore, user_id: str) -> str:
    out = io.StringIO()
    export_user(store, user_id, out)
    return out.getvalue()


def test_export_then_import_round_trips_exactly_between_two_in_memory_stores() -> None:
    owner, other = new_user(), new_user()
    source = InMemoryStore()
    originals = [
        make_memory(owner, f"memory {n} about the 東京 harbor 🎉", snippets=("one", "two") if n % 2 else ())
        for n in range(limits.EXPORT_PAGE + 20)  # more than one page of the export
    ]
    source.add_many([*originals, make_memory(other, "not exported")])
    first = exported(source, owner)
    target = InMemoryStore()

    report = import_lines(io.StringIO(first), target, now=lambda: NOW, batch_size=50)

    assert (report.imported, report.skipped) == (len(originals), ())
    assert exported(target, owner) == first
    assert target.get_many(user_id=owner, memory_ids=[m.id for m in originals]) == {m.id: m for m in originals}
    assert target.usage(user_id=owner).memories == len(originals)
    assert target.memory_owners() == [owner]
    hits = InMemorySearch(target, OwnerIndexer()).search(user_id=owner, query="harbor", limit=5)
    assert len(hits) == 5


def test_missing_ids_and_times_are_minted_and_the_owner_comes_from_the_line() -> None:
    store = InMemoryStore()
    report = import_lines(
        [line(tags=["a", "b"], contexts=[{"snippet": "from chat", "conversation_id": "c1"}])], store, now=lambda: NOW
    )
    assert report.imported == 1
    (saved,) = store.list(user_id=USER, limit=5, after=None)
    assert saved.created_at == saved.updated_at == NOW
    assert saved.org_id == ORG
    assert saved.tags == ("a", "b")
    assert saved.contexts[0].citation is not None
    assert saved.contexts[0].created_at == NOW


def test_bad_lines_are_reported_by_number_and_skipped_while_good_lines_land() -> None:
    store = InMemoryStore()
    lines = [
        line(content="good one"),
        "not json",
        line(content=""),
        line(user_id="alice"),
        "",
        line(content="x" * (limits.CONTENT.max + 1), org_id="org_nope"),
        line(created_at="yesterday"),
        line(created_at="2026-07-02T12:00:00"),
        line(contexts=[{"snippet": "ok", "id": "mem_01m8vgptfke8as43r5emqcrs44"}]),
        json.dumps(["a", "list"]),
        line(content="good two", source="modal"),
    ]
    report = import_lines(lines, store, now=lambda: NOW)
    assert report.imported == 2
    assert [problem.line for problem in report.skipped] == [2, 3, 4, 6, 7, 8, 9, 10]
    described = [problem.describe() for problem in report.skipped]
    assert described[0] == "line 2: line must be one JSON object (Expecting value at column 1)"
    assert described[1].startswith("line 3: content must hold")
    assert "user_id" in described[2]
    assert "content" in described[3]
    assert "org_id" in described[3]
    assert "contexts.0.id" in described[6]
    # Never the content itself.
    assert all("x" * 50 not in text for text in described)
    assert [m.content for m in store.list(user_id=USER, limit=5, after=None)] == ["good two", "good one"]


def test_an_id_already_stored_skips_only_that_line() -> None:
    store = InMemoryStore()
    existing = make_memory(USER, "already here")
    store.add(user_id=USER, memory=existing)
    lines = [line(content="before"), memory_line(existing), line(content="after")]

    report = import_lines(lines, store, now=lambda: NOW)

    assert report.imported == 2
    assert [(p.line, p.problems) for p in report.skipped] == [(2, ("id is already stored",))]
    assert store.usage(user_id=USER).memories == 3


def test_parse_line_builds_the_same_memory_as_the_exported_line() -> None:
    original: Memory = make_memory(USER, "exact", snippets=("with citation", "plain"))
    assert parse_line(memory_line(original), now=lambda: NOW) == original


def test_the_export_line_is_the_wire_memory_with_the_owners_ids_and_microseconds() -> None:
    # One shape of a memory in JSON (memorybank_core.wire): export adds who owns it, the format, who wrote this
    # version and its history.
    original: Memory = make_memory(USER, "exact", snippets=("with citation", "plain"))
    exported_line = json.loads(memory_line(original))
    assert (exported_line.pop("user_id"), exported_line.pop("org_id")) == (original.user_id, original.org_id)
    popped = [exported_line.pop(key) for key in ("format", "door", "credential", "revisions")]
    assert popped == [2, None, None, []]
    assert exported_line == memory_json(original, timespec=EXPORT_TIMESPEC)
    assert exported_line["created_at"].endswith(f".{original.created_at.microsecond:06d}Z")


def test_export_refuses_a_malformed_user_id() -> None:
    with pytest.raises(InvalidInputError, match="user"):
        export_user(InMemoryStore(), "alice", io.StringIO())


def test_import_file_reads_utf8_and_reports_undecodable_lines(tmp_path: Path) -> None:
    store = InMemoryStore()
    path = tmp_path / "memories.jsonl"
    good = line(content="東京 café").encode()
    broken = line(content="latin1 MARK").encode().replace(b"MARK", b"\xe9")
    path.write_bytes(good + b"\n" + broken + b"\n")

    report = import_file(path, store, show_progress=False)

    assert report.imported == 1
    assert [(p.line, p.problems) for p in report.skipped] == [
        (2, ("content must be valid Unicode (it holds a lone surrogate)",))
    ]
    assert [m.content for m in store.list(user_id=USER, limit=5, after=None)] == ["東京 café"]


def test_portability_loads_no_storage_adapter() -> None:
    # A host without the `sql` extra imports and exports with its own store (an import-linter contract too).
    probe = "import sys, memorybank.portability; print(sorted({'adapters_mysql', 'sqlalchemy'} & set(sys.modules)))"
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)  # noqa: S603
    assert ran.stdout.strip() == "[]"


@attrs.frozen
class InMemoryStorage:
    """A host's own bundle of storage ports (`StoragePorts`), here the in-memory adapters."""

    store: InMemoryStore = attrs.field(factory=InMemoryStore)
    controls: ControlStore = attrs.field(factory=InMemoryControlStore)
    token_store: TokenStore = attrs.field(factory=InMemoryTokenStore)
    panel_sessions: PanelSessionStore = attrs.field(factory=InMemoryPanelSessionStore)
    unit_of_work: UnitOfWork = attrs.field(factory=NoUnitOfWork)

    @property
    def search_engine(self) -> SearchEngine:
        return InMemorySearch(self.store, OwnerIndexer())


def test_the_admin_commands_services_run_over_a_hosts_own_ports() -> None:
    # What `token`, `panel-link`, `gate` and `quota` drive, built by the composition root over in-memory ports.
    services = bootstrap.build(ports=InMemoryStorage()).services
    alice = User()
    issued = services.tokens.issue(user_id=alice.user_id, org_id=alice.organization_id)
    principal = services.tokens.authenticate(issued.secret)
    assert principal is not None
    services.bank.save(principal, JsonValue({"content": "saved over the host's ports"}))
    assert services.controls is not None
    services.controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=5)
    assert services.controls.effective(user_id=alice.user_id).usage.memories == 1
    link = services.panel_sessions.issue_link(user_id=alice.user_id, org_id=alice.organization_id)
    assert services.panel_sessions.redeem_link(link.code) is not None
    services.tokens.revoke(issued.token.id)
    assert services.tokens.authenticate(issued.secret) is None


def test_secrets_scan_runs_over_a_hosts_own_ports(capsys: pytest.CaptureFixture[str]) -> None:
    store = InMemoryStore()
    leaky, clean = new_user(), new_user()
    holding = make_memory(leaky, "my key is AKIAIOSFODNN7EXAMPLE", snippets=())
    store.add_many([holding, make_memory(clean, "tea")])
    out = io.StringIO()

    with pytest.raises(CommandError, match="1 memory of 2 owners holds"):
        secrets.scan(store, store, DetectSecretsScreen(), out)

    [found] = out.getvalue().splitlines()
    assert found.split("\t")[:3] == ["aws_access_key", holding.id, leaky]
    assert "AKIA" not in out.getvalue() + capsys.readouterr().err


def test_the_runtime_the_commands_open_carries_the_operators_ports(tmp_path: Path) -> None:
    # `import`, `export` and `secrets scan` take these from `Runtime.ports`: the core's in-memory ones here.
    runtime = bootstrap.build(store=InMemoryStore())
    leaky = new_user()
    path = tmp_path / "in.jsonl"
    path.write_text(
        json.dumps({"user_id": leaky, "org_id": new_id(ORGANIZATION_PREFIX), "content": "AKIAIOSFODNN7EXAMPLE"})
    )

    assert import_file(path, runtime.ports.writer(), show_progress=False).imported == 1
    with pytest.raises(CommandError, match="1 memory of 1 owner holds"):
        secrets.scan(runtime.ports.owners(), runtime.ports.store, DetectSecretsScreen(), io.StringIO())
    exported = io.StringIO()
    assert export_user(runtime.ports.store, leaky, exported) == 1


def test_a_hosts_bundle_without_the_operators_ports_says_which_command_needs_them() -> None:
    ports = bootstrap.build(ports=InMemoryStorage()).ports

    with pytest.raises(RuntimeError, match="memorybank import"):
        ports.writer()
    with pytest.raises(RuntimeError, match="memorybank secrets scan"):
        ports.owners()


def team_line(org: str | None = ORG, **fields: object) -> str:
    base: dict[str, object] = {"scope": "org", "org_id": org, "author": USER, "content": "a team memory"}
    base.update(fields)
    return json.dumps({key: value for key, value in base.items() if value is not None})


def test_a_team_banks_export_imports_back_with_its_authors_into_its_organizations_bank_only() -> None:
    member = User(scopes=frozenset({READ_SCOPE, WRITE_SCOPE, ORG_READ_SCOPE, ORG_WRITE_SCOPE}))
    colleague = attrs.evolve(member, user_id=new_user())
    ports = InMemoryStorage()
    source, bank = ports.store, bootstrap.build(ports=ports).services.bank
    bank.save(member, JsonValue({"content": "The staging database lives in eu-west-1", "bankScope": "org"}))
    edited = bank.save(colleague, JsonValue({"content": "Deploys freeze on Fridays", "bankScope": "org"}))
    bank.edit(
        colleague,
        memory_id=edited.id,
        request=EditRequest.parse({"content": "Deploys freeze on Thursdays"}),
        bank="org",
    )
    bank.save(member, JsonValue({"content": "My own note stays out of the team's export"}))
    out = io.StringIO()

    count = export_org(source, member.organization_id, out)
    target_ports = InMemoryStorage()
    target = target_ports.store
    report = import_lines(io.StringIO(out.getvalue()), target, now=lambda: NOW)
    again = io.StringIO()
    export_org(target, member.organization_id, again)

    assert (count, report.imported, report.skipped) == (2, 2, ())
    assert again.getvalue() == out.getvalue()
    lines = [json.loads(text) for text in out.getvalue().splitlines()]
    assert [(line["scope"], line["author"], line["user_id"]) for line in lines] == [
        ("org", colleague.user_id, org_bank_owner(member.organization_id)),
        ("org", member.user_id, org_bank_owner(member.organization_id)),
    ]
    assert [len(line["revisions"]) for line in lines] == [1, 0]
    moved = bootstrap.build(ports=target_ports).services.bank
    assert [(m.content, m.author) for m in moved.list(member, bank="org").memories] == [
        ("Deploys freeze on Thursdays", colleague.user_id),
        ("The staging database lives in eu-west-1", member.user_id),
    ]
    assert list(moved.list(member).memories) == []
    assert target.memory_owners() == [org_bank_owner(member.organization_id)]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (team_line(user_id=USER), "user_id must be absent or the bank of org_id for scope org"),
        (team_line(user_id=org_bank_owner(new_id(ORGANIZATION_PREFIX))), "user_id must be absent or the bank"),
        (team_line(author=None), "author must be a TypeID of the form usr_"),
        (team_line(author=org_bank_owner(ORG)), "author must be a TypeID of the form usr_"),
        (team_line(org=None), "org_id must be a TypeID of the form org_"),
        (team_line(scope="team"), 'scope must be "user" or "org"'),
        (line(author=USER), 'author is only for scope "org"'),
        (line(scope="org"), "author must be a TypeID of the form usr_"),
    ],
    ids=["person", "other-bank", "no-author", "bank-author", "no-org", "unknown-scope", "user-author", "org-user"],
)
def test_a_team_line_that_would_land_outside_its_organizations_bank_is_skipped(text: str, reason: str) -> None:
    store = InMemoryStore()

    report = import_lines([text], store, now=lambda: NOW)

    assert report.imported == 0
    assert [problem.line for problem in report.skipped] == [1]
    assert reason in report.skipped[0].describe()
    assert store.memory_owners() == []


def test_a_team_line_without_user_id_lands_in_its_organizations_bank() -> None:
    store = InMemoryStore()

    report = import_lines([team_line()], store, now=lambda: NOW)

    assert report.imported == 1
    (saved,) = store.list(user_id=org_bank_owner(ORG), limit=5, after=None)
    assert (saved.scope, saved.author, saved.org_id) == (Scope.ORG, USER, ORG)
    assert list(store.list(user_id=USER, limit=5, after=None)) == []


def test_export_refuses_a_malformed_org_id() -> None:
    with pytest.raises(InvalidInputError, match="org must be a TypeID"):
        export_org(InMemoryStore(), USER, io.StringIO())
