"""ADR 0026: which `memory` rows (and their vectors) belong to whom is written once, in adapters_mysql/owner.py.

The guard follows the tables however a module names them: `from adapters_mysql.schema import memory as
memory_table`, or `schema.memory` through the module itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import adapters_mysql

#: The columns that say whose a row is; a comparison on one of them is an owner predicate.
OWNER_COLUMNS = frozenset({"user_id", "org_id", "scope"})
#: The tables whose owner predicates live in owner.py (`owned_memories`, `memory_row`, `owned_vectors`, ...).
OWNED_TABLES = frozenset({"memory", "memory_vector"})
SCHEMA_MODULE = "adapters_mysql.schema"
#: owner.py holds the predicates; schema.py declares the columns (and their indexes).
HOMES = frozenset({"owner.py", "schema.py"})


def owner_comparisons(source: str) -> list[int]:
    """The lines that compare an owned table's `user_id`, `org_id` or `scope` column with anything."""
    tree = ast.parse(source)
    tables, schemas = _names_of_owned_tables(tree)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            _is_owner_column(side, tables, schemas) for side in (node.left, *node.comparators)
        ):
            lines.append(node.lineno)
    return lines


def _names_of_owned_tables(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The local names bound to an owned table, and to the schema module itself (bare names when never imported,
    as in a snippet)."""
    tables: set[str] = set()
    schemas: set[str] = set()
    imported = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == SCHEMA_MODULE:
            imported = True
            tables |= {alias.asname or alias.name for alias in node.names if alias.name in OWNED_TABLES}
        elif isinstance(node, ast.ImportFrom) and node.module == "adapters_mysql":
            schemas |= {alias.asname or alias.name for alias in node.names if alias.name == "schema"}
        elif isinstance(node, ast.Import):
            schemas |= {alias.asname for alias in node.names if alias.name == SCHEMA_MODULE and alias.asname}
    return (tables if imported else set(OWNED_TABLES)), schemas


def _is_owner_column(node: ast.expr, tables: set[str], schemas: set[str]) -> bool:
    if not (isinstance(node, ast.Attribute) and node.attr in OWNER_COLUMNS):
        return False
    columns = node.value
    if not (isinstance(columns, ast.Attribute) and columns.attr == "c"):
        return False
    table = columns.value
    if isinstance(table, ast.Name):
        return table.id in tables
    return (
        isinstance(table, ast.Attribute)
        and table.attr in OWNED_TABLES
        and isinstance(table.value, ast.Name)
        and table.value.id in schemas
    )


def test_every_owner_predicate_on_memory_comes_from_the_owner_module() -> None:
    package = Path(adapters_mysql.__file__).parent
    offenders = {
        str(path.relative_to(package)): lines
        for path in sorted(package.rglob("*.py"))
        if path.name not in HOMES and (lines := owner_comparisons(path.read_text()))
    }
    assert offenders == {}


def test_the_check_sees_an_inline_owner_predicate() -> None:
    inline = "q = memory.update().where(memory.c.user_id == user_id, memory.c.id == memory_id)\n"
    joined = "on = sa.and_(memory_vector.c.user_id == memory.c.user_id)\n"
    assert owner_comparisons(inline) == [1]
    assert owner_comparisons(joined) == [1]
    assert owner_comparisons("q = memory.update().where(memory_row(user_id, memory_id))\n") == []


def test_the_check_follows_the_table_under_another_name() -> None:
    aliased = (
        "from adapters_mysql.schema import memory as memory_table, memory_context\n"
        "on = sa.and_(memory_context.c.user_id == memory_table.c.user_id)\n"
    )
    through_module = (
        "from adapters_mysql import schema\nq = sa.select(schema.memory).where(schema.memory.c.scope == 'user')\n"
    )
    vectors = "from adapters_mysql.schema import memory_vector as vectors\nq = vectors.c.user_id > after\n"
    assert owner_comparisons(aliased) == [2]
    assert owner_comparisons(through_module) == [2]
    assert owner_comparisons(vectors) == [2]
    # A name that is not the owned table is not one, even if it is called `memory` elsewhere.
    assert (
        owner_comparisons("from adapters_mysql.schema import memory_context as memory\nq = memory.c.user_id == u\n")
        == []
    )
