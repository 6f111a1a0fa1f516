"""ADR 0026: which `memory` rows belong to whom is written once, in adapters_mysql/owner.py."""

from __future__ import annotations

import ast
from pathlib import Path

import adapters_mysql

#: The columns that say whose a memory is; a comparison on one of them is an owner predicate.
OWNER_COLUMNS = frozenset({"user_id", "org_id", "scope"})
#: owner.py holds the predicates; schema.py declares the columns (and their indexes).
HOMES = frozenset({"owner.py", "schema.py"})


def owner_comparisons(source: str) -> list[int]:
    """The lines that compare `memory.c.user_id`, `.org_id` or `.scope` with anything."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(_is_owner_column(side) for side in (node.left, *node.comparators)):
            lines.append(node.lineno)
    return lines


def _is_owner_column(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr in OWNER_COLUMNS
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "c"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "memory"
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
