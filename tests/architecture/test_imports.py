"""The hexagon, checked mechanically: the core imports only the standard library, attrs and typeid."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import memorybank_core

ALLOWED_THIRD_PARTY = {"attrs", "typeid"}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_core_imports_only_stdlib_attrs_and_typeid() -> None:
    core = Path(memorybank_core.__file__).parent
    offenders = {}
    for path in sorted(core.rglob("*.py")):
        foreign = imported_roots(path) - set(sys.stdlib_module_names) - ALLOWED_THIRD_PARTY - {"memorybank_core"}
        if foreign:
            offenders[path.name] = foreign
    assert offenders == {}


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import os\nfrom sqlalchemy import select\nimport attrs\n")
    assert imported_roots(module) - set(sys.stdlib_module_names) - ALLOWED_THIRD_PARTY == {"sqlalchemy"}
