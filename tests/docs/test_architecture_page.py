"""docs/architecture.md stays true: every package has its row, every hop of the request paths names real code,
and every file it points at exists."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
PAGE = (REPOSITORY / "docs" / "architecture.md").read_text(encoding="utf-8")
#: The checkout's own packages the page describes besides what the build ships.
CHECKOUT_PACKAGES = {"benchmarks", "harness", "tests"}


def shipped_packages() -> set[str]:
    """Every top-level package the wheel ships, by the name it is imported as or lives under in the checkout."""
    setuptools = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped: dict[str, str] = setuptools["package-dir"]
    tops = {package.split(".")[0] for package in setuptools["packages"]}
    # A package mapped in from a folder of its own (`adapters_mysql.migrations` <- `migrations/`) has a row too.
    return tops | {folder for folder in mapped.values() if "/" not in folder}


def section(title: str, page: str = PAGE) -> str:
    """The text of the `## title` section."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", page, re.DOTALL | re.MULTILINE)
    assert found is not None, f"docs/architecture.md has no '## {title}' section"
    return found.group(1)


def package_rows(page: str = PAGE) -> set[str]:
    """The packages named in the first column of the packages table."""
    return set(re.findall(r"^\| `([a-z_]+)` \|", section("Packages and what each holds", page), re.MULTILINE))


def named_code(page: str = PAGE, title: str = "Two requests, hop by hop") -> list[str]:
    """The dotted names of our code in a section (`adapters_http.endpoint.authenticated_endpoint`)."""
    roots = "|".join(sorted(shipped_packages() | CHECKOUT_PACKAGES))
    text = section(title, page)
    return sorted(set(re.findall(rf"`((?:{roots})(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`", text)))


def resolve(dotted: str) -> object:
    """The object `dotted` names: its longest importable module, then attributes.

    Raises:
        LookupError: no such module or attribute.
    """
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if isinstance(found, ModuleType) and not hasattr(found, name):
                raise LookupError(f"{dotted}: {'.'.join(parts[:cut])} has no {name}")
            found = getattr(found, name, None)
            if found is None:
                raise LookupError(f"{dotted}: no {name}")
        return found
    raise LookupError(f"{dotted}: no such module")


def test_every_package_has_its_row_and_every_row_is_a_package() -> None:
    expected = shipped_packages() | CHECKOUT_PACKAGES
    rows = package_rows()
    assert sorted(expected - rows) == [], "a package docs/architecture.md does not describe"
    assert sorted(rows - expected) == [], "a row for a package that does not exist"


@pytest.mark.parametrize("dotted", named_code())
def test_every_hop_of_the_request_paths_names_real_code(dotted: str) -> None:
    resolve(dotted)


@pytest.mark.parametrize("dotted", named_code(title="Recipes"))
def test_every_step_of_the_recipes_names_real_code(dotted: str) -> None:
    resolve(dotted)


def test_both_request_paths_are_described() -> None:
    hops = section("Two requests, hop by hop")
    assert "REST search with hybrid search" in hops
    assert "An agent's save through the MCP rail" in hops
    assert len(named_code()) >= 30


def test_every_file_the_page_points_at_exists() -> None:
    paths = set(re.findall(r"`((?:[a-z_]+/)+[A-Za-z0-9_.]*)`", PAGE))
    missing = sorted(path for path in paths if not (REPOSITORY / path).exists())
    assert missing == []


def test_the_checks_catch_a_stale_page() -> None:
    stale = PAGE.replace("| `adapters_embedding` |", "| the model |").replace(
        "`adapters_http.endpoint.authenticated_endpoint`", "`adapters_http.endpoint.old_endpoint`"
    )
    assert "adapters_embedding" not in package_rows(stale)
    assert "adapters_http.endpoint.old_endpoint" in named_code(stale)
    with pytest.raises(LookupError):
        resolve("adapters_http.endpoint.old_endpoint")
    with pytest.raises(LookupError):
        resolve("adapters_nothing.here")
