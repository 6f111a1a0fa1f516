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


def core_import_graph(core: Path) -> dict[str, set[str]]:
    """Each core module's imports of other core modules, `TYPE_CHECKING` ones included (the package itself left out).

    The package `__init__` re-exports everything, so it is no module's dependency of substance.
    """
    graph: dict[str, set[str]] = {}
    modules = {path.stem for path in core.glob("*.py")}
    for path in sorted(core.glob("*.py")):
        if path.name == "__init__.py":
            continue
        name = f"memorybank_core.{path.stem}"
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name.startswith("memorybank_core.")}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "memorybank_core":
                # `from memorybank_core import ids, limits`: the submodules among the names.
                graph[name] |= {f"memorybank_core.{a.name}" for a in node.names if a.name in modules}
            elif (
                isinstance(node, ast.ImportFrom) and node.level == 0 and str(node.module).startswith("memorybank_core.")
            ):
                graph[name].add(str(node.module))
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first walk, each as the modules along it (first = last)."""
    cycles: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycles.append([*path[path.index(module) :], module])
            return
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    return cycles


def test_no_two_core_modules_import_each_other_even_for_type_checking() -> None:
    assert import_cycles(core_import_graph(Path(memorybank_core.__file__).parent)) == []


def test_the_cycle_check_sees_a_circle_through_a_type_checking_import(tmp_path: Path) -> None:
    (tmp_path / "ports.py").write_text("from memorybank_core.rate_limits import RateLimit\n")
    (tmp_path / "rate_limits.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memorybank_core.ports import Principal\n"
    )
    cycles = import_cycles(core_import_graph(tmp_path))
    assert cycles == [["memorybank_core.ports", "memorybank_core.rate_limits", "memorybank_core.ports"]]
