"""What the build ships: every package of the checkout, the migrations mapped into the SQL adapter."""

from __future__ import annotations

import tomllib
from pathlib import Path

from adapters_mysql import revisions

REPOSITORY = Path(__file__).resolve().parents[2]
#: Checkout folders that are not shipped: the test suite, the benchmarks and what they share run from a checkout only.
NOT_SHIPPED = {"tests", "benchmarks", "harness", "build", "dist"}


def _setuptools() -> dict[str, object]:
    config: dict[str, object] = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["setuptools"]
    return config


def _source_folder(package: str, mapped: dict[str, str]) -> Path:
    """Where the build takes `package` from: its own path, or under the nearest mapped parent."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        parent = ".".join(parts[:cut])
        if parent in mapped:
            return REPOSITORY.joinpath(mapped[parent], *parts[cut:])
    return REPOSITORY.joinpath(*parts)


def test_the_build_lists_every_package_of_the_checkout() -> None:
    config = _setuptools()
    listed = config["packages"]
    mapped = config["package-dir"]
    assert isinstance(listed, list)
    assert isinstance(mapped, dict)
    shipped = {_source_folder(package, mapped) for package in listed}
    in_checkout = {
        init.parent
        for init in REPOSITORY.rglob("__init__.py")
        if not ({".venv", "node_modules"} & set(init.parts))
        and init.relative_to(REPOSITORY).parts[0] not in NOT_SHIPPED
    }
    assert sorted(map(str, in_checkout - shipped)) == [], "a package the wheel would leave out"
    assert sorted(map(str, shipped - in_checkout)) == [], "a listed package with no folder"


def test_the_migrations_have_one_copy_found_through_the_package_mapping() -> None:
    assert not (REPOSITORY / "adapters_mysql" / "migrations").exists()
    assert _setuptools()["package-dir"] == {revisions.SCRIPTS_PACKAGE: "migrations"}
    assert Path(revisions.script_location()) == REPOSITORY / "migrations"
    assert (Path(revisions.script_location()) / "env.py").is_file()
