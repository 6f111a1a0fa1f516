"""Every Python example in README.md and docs/ runs, and prints what its page says (tests/docs/examples.py)."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.served import REPO_ROOT
from tests.docs.embeddings import REQUESTS, apps
from tests.docs.examples import (
    EXTRA_MODULES,
    README_EXTRA,
    SERVERS,
    STANDALONE_MARK,
    examples,
    fence_count,
    pages,
    python_pages,
    run_page,
    servers_of,
    stands_alone,
)
from tests.mysql_server import ThrowawayDatabase
from tests.sql.backends import storage_at


def _migrated(url: str) -> str:
    storage = storage_at(url)
    try:
        storage.migrate()
    finally:
        storage.close()
    return url


@pytest.fixture
def mariadb_databases() -> Iterator[Callable[[], str]]:
    """Fresh, migrated MariaDB databases, dropped afterwards."""
    made: list[ThrowawayDatabase] = []

    def make() -> str:
        made.append(ThrowawayDatabase())
        return _migrated(made[-1].url)

    yield make
    for database in made:
        database.drop()


def _check_apps(page: str, names: dict[str, object]) -> None:
    if apps(names):
        # An app the page builds answers a real request as the page mounted it (tests/docs/embeddings.py).
        assert page in REQUESTS, f"{page} builds {apps(names)}: add it to tests/docs/embeddings.REQUESTS"
        REQUESTS[page](names)


@pytest.mark.parametrize("page", [page for page in python_pages() if not servers_of(page)])
def test_every_python_example_runs_as_written_and_prints_what_its_page_says(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the reader's directory: the checks of what the page built run there too
    _check_apps(page, run_page(page, folder=tmp_path))


@pytest.mark.mysql
@pytest.mark.parametrize("page", [page for page in python_pages() if "mysql" in servers_of(page)])
def test_the_examples_that_need_a_mysql_server_run_on_mariadb(
    page: str, mariadb_databases: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _check_apps(page, run_page(page, mysql_url=mariadb_databases, folder=tmp_path))


def test_every_mark_names_a_known_extra_or_server_and_the_extras_are_beyond_the_readmes_install() -> None:
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    def closure(extra: str) -> set[str]:
        nested = {
            name.strip()
            for requirement in extras[extra]
            if requirement.startswith("memorybank[")
            for name in requirement.removeprefix("memorybank[").rstrip("]").split(",")
        }
        return {extra}.union(*(closure(name) for name in nested))

    for page in pages():
        for example in examples(page):
            assert example.extras <= set(extras), f"{page}:{example.line} {example.needs}"
            assert example.servers <= set(SERVERS), f"{page}:{example.line} {example.needs}"
            assert len(example.extras) + len(example.servers) == len(example.needs), f"{page}:{example.line}"
    for extra in EXTRA_MODULES:
        assert extra in extras
        assert extra not in closure(README_EXTRA), f"{extra} comes with the README's install"


def test_a_block_that_needs_an_extra_without_saying_so_fails(tmp_path: Path) -> None:
    # After the README's install there is no mysqlclient: the block fails as it would for the reader.
    block = 'import sqlalchemy as sa\nsa.create_engine("mysql+mysqldb://u:p@db/x")\n'
    (tmp_path / "quiet.md").write_text(f"```python\n{block}```\n")
    (tmp_path / "said.md").write_text(f"<!-- docs-test: needs mysql extra -->\n```python\n{block}```\n")

    with pytest.raises(ModuleNotFoundError, match="MySQLdb"):
        run_page("quiet.md", root=tmp_path)
    run_page("said.md", root=tmp_path)


def test_a_block_runs_in_an_empty_directory_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "here.md").write_text("```python\nimport os\nprint(os.listdir('.'))  # prints: []\n```\n")

    run_page("here.md", root=tmp_path)


def test_every_python_fence_is_collected() -> None:
    for page in pages():
        assert (page, len(examples(page))) == (page, fence_count(page))
    assert "README.md" in python_pages()


def test_an_example_that_prints_something_else_than_its_page_says_fails(tmp_path: Path) -> None:
    (tmp_path / "said.md").write_text("```python\nprint(1 + 1)  # prints: 2\n```\n")
    (tmp_path / "wrong.md").write_text("```python\nprint(1 + 2)  # prints: 2\n```\n")
    (tmp_path / "unsaid.md").write_text("```python\nprint('unchecked')\n```\n")

    run_page("said.md", root=tmp_path)
    for page in ("wrong.md", "unsaid.md"):
        with pytest.raises(AssertionError, match=f"{page}:2 printed"):
            run_page(page, root=tmp_path)


def test_on_a_page_whose_blocks_stand_alone_a_block_that_leans_on_an_earlier_one_fails(tmp_path: Path) -> None:
    leaning = "```python\nanswer = 42\n```\n\n```python\nprint(answer)  # prints: 42\n```\n"
    (tmp_path / "followed.md").write_text(leaning)
    (tmp_path / "alone.md").write_text(f"{STANDALONE_MARK}\n\n{leaning}")

    run_page("followed.md", root=tmp_path)  # read in order, the second block may lean
    with pytest.raises(NameError, match="answer"):
        run_page("alone.md", root=tmp_path)


def test_the_readmes_python_blocks_each_stand_alone() -> None:
    # A reader copies any one of them: README.md says so, and the docs test then runs each on its own.
    assert stands_alone("README.md")


def test_a_documented_test_module_runs_under_pytest_beside_the_pages_files(tmp_path: Path) -> None:
    helper = "<!-- docs-test: file helper.py -->\n```python\ndef answer() -> int:\n    return 42\n```\n"
    passing = "from helper import answer\n\n\ndef test_answer() -> None:\n    assert answer() == 42\n"
    failing = passing.replace("== 42", "== 41")
    for name, module in (("passes.md", passing), ("fails.md", failing)):
        (tmp_path / name).write_text(f"{helper}\n<!-- docs-test: pytest test_it.py -->\n```python\n{module}```\n")

    run_page("passes.md", root=tmp_path)
    with pytest.raises(AssertionError, match=r"fails.md:\d+ \(test_it.py\) failed under pytest"):
        run_page("fails.md", root=tmp_path)
