"""ADR 0033: the object graph is wired in one place, `memorybank.bootstrap.build`, and everything else asks it.

import-linter says which package may import which (pyproject.toml); these checks say what it cannot: where a
bank or a storage is constructed, and that a command constructs nothing itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
SKIPPED = frozenset({".venv", "node_modules", "build", "dist", ".git"})

#: What only the composition root builds: the bank, and a SQL storage (and so its engine and ports).
WIRED = frozenset({"MemoryBank", "open_storage", "SqlStorage"})
#: Where those are built, and why each place may.
BUILDERS = {
    "memorybank/composition.py": "the composition root's pieces (bootstrap.build calls them)",
    "adapters_mysql/storage.py": "open_storage itself builds the SqlStorage",
    "adapters_mysql/sharding.py": "migrate --shards opens each data node and the head to migrate them",
    "memorybank_testing/principals.py": "the contract suite's bank over a host's own ports (bank_over): a host is its "
    "own composition root, and this package may not import memorybank",
    "tests/http/test_embedding.py": "a host embedding the library on its own engine: its own composition root",
    "tests/sql/test_sealing.py": "storage must refuse an indexer that does not match its sealer: miswired on purpose",
    "tests/sql/test_purge.py": "a Spider head's storage, which no test database is, flagged by hand",
    "tests/sql/test_compact.py": "a Spider head's storage, which no test database is, flagged by hand",
}

#: What a command must get from a runtime (`commands.base.runtime`, `bootstrap.build`), never build.
SERVICES = frozenset({"MemoryBank", "TokenService", "PanelSessions", "MemoryControls", "Offboarding", "RateLimits"})
FACTORY_PREFIXES = ("open_", "create_", "build_", "connect_", "load_sealer")


def constructions(source: str, names: frozenset[str] = WIRED) -> list[tuple[int, str]]:
    """The calls of `names` (as a bare name or an attribute: `adapters_mysql.open_storage(...)`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            called = _called_name(node.func)
            if called in names:
                found.append((node.lineno, called))
    return found


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _python_files() -> list[Path]:
    return [path for path in sorted(REPOSITORY.rglob("*.py")) if not SKIPPED & set(path.relative_to(REPOSITORY).parts)]


def test_banks_and_storage_are_built_only_by_the_composition_root_and_the_places_that_say_why() -> None:
    built = {
        str(path.relative_to(REPOSITORY)): lines
        for path in _python_files()
        if (lines := constructions(path.read_text(encoding="utf-8")))
    }
    assert sorted(set(built) - set(BUILDERS)) == [], "build it with memorybank.bootstrap.build (and its overrides)"
    assert sorted(set(BUILDERS) - set(built)) == [], "a builder that no longer builds: drop it from BUILDERS"


def adapter_builds_in_command(source: str) -> list[tuple[int, str]]:
    """A command module's calls that build something: an adapter's class or factory (imported from an `adapters_*`
    package), a core service, or one of the composition root's pieces (`composition.build_app(...)`)."""
    tree = ast.parse(source)
    from_adapters = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("adapters_")
        for alias in node.names
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node.func)
        if name is None:
            continue
        adapter_class_or_factory = name in from_adapters and (name[0].isupper() or name.startswith(FACTORY_PREFIXES))
        root_piece = (
            isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "composition"
            and name.startswith(FACTORY_PREFIXES)
        )
        if adapter_class_or_factory or name in SERVICES or root_piece:
            found.append((node.lineno, name))
    return found


def test_commands_build_no_adapter_and_no_service_themselves() -> None:
    commands = REPOSITORY / "memorybank" / "commands"
    offenders = {
        path.name: found
        for path in sorted(commands.glob("*.py"))
        if (found := adapter_builds_in_command(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "a command takes what it needs from its runtime (commands.base.runtime)"


#: The commands whose job is the SQL database itself (its schema, its key ring, its batch walks, what `serve` says
#: about it at start-up); every other command runs on the runtime's ports (`Runtime.ports`), as a host's would.
SQL_JOBS = frozenset({"migrate.py", "reindex.py", "keys.py", "serve.py", "compact.py"})


def storage_reads(source: str) -> list[int]:
    """The lines reading a runtime's SQL storage (`opened.storage`, `runtime.storage`)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr == "storage" and isinstance(node.ctx, ast.Load)
    ]


def test_only_the_sql_jobs_reach_past_the_ports_to_the_database() -> None:
    commands = REPOSITORY / "memorybank" / "commands"
    readers = {path.name for path in commands.glob("*.py") if storage_reads(path.read_text(encoding="utf-8"))}
    assert sorted(readers - SQL_JOBS) == [], "run on opened.ports (import, export, secrets scan: ADR 0034)"
    assert storage_reads("with runtime(settings) as opened:\n    scan(opened.storage)\n") == [2]


def test_the_checks_see_what_they_forbid() -> None:
    assert constructions("bank = MemoryBank(store=s, search_engine=e)\n") == [(1, "MemoryBank")]
    assert constructions("s = adapters_mysql.open_storage(url, indexer=i)\n") == [(1, "open_storage")]
    assert constructions("runtime = bootstrap.build(settings, store=InMemoryStore())\n") == []
    planted = (
        "from adapters_mysql import open_storage\n"
        "from adapters_crypto import AesGcmSealer, load_key_ring\n"
        "from memorybank import composition\n"
        "storage = open_storage(url, indexer=OwnerIndexer())\n"
        "sealer = AesGcmSealer(load_key_ring(path))\n"
        "tokens = TokenService(store=storage.token_store)\n"
        "app = composition.build_app(services)\n"
    )
    assert adapter_builds_in_command(planted) == [
        (4, "open_storage"),
        (5, "AesGcmSealer"),
        (6, "TokenService"),
        (7, "build_app"),
    ]
    # The key ring commands write key files: functions, not adapters the bank runs on.
    assert adapter_builds_in_command("from adapters_crypto import new_key_ring\nring = new_key_ring()\n") == []
