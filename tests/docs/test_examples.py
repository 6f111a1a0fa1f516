"""Every Python example in README.md and docs/ runs, and prints what its page says (tests/docs/examples.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.docs.embeddings import REQUESTS, apps
from tests.docs.examples import (
    STANDALONE_MARK,
    database_pages,
    examples,
    fence_count,
    pages,
    python_pages,
    run_page,
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
def sqlite_databases(tmp_path: Path) -> Callable[[], str]:
    """Fresh, migrated SQLite files."""
    made = iter(range(1_000))
    return lambda: _migrated(f"sqlite:///{tmp_path / f'docs{next(made)}.sqlite3'}")


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


@pytest.mark.parametrize("page", python_pages())
def test_every_python_example_runs_and_prints_what_its_page_says(
    page: str, sqlite_databases: Callable[[], str]
) -> None:
    names = run_page(page, sqlite_databases)
    if apps(names):
        # An app the page builds answers a real request as the page mounted it (tests/docs/embeddings.py).
        assert page in REQUESTS, f"{page} builds {apps(names)}: add it to tests/docs/embeddings.REQUESTS"
        REQUESTS[page](names)


@pytest.mark.mysql
@pytest.mark.parametrize("page", database_pages())
def test_the_database_examples_run_on_mariadb(page: str, mariadb_databases: Callable[[], str]) -> None:
    run_page(page, mariadb_databases)


def test_every_python_fence_is_collected() -> None:
    for page in pages():
        assert (page, len(examples(page))) == (page, fence_count(page))
    assert "README.md" in python_pages()


def test_an_example_that_prints_something_else_than_its_page_says_fails(
    tmp_path: Path, sqlite_databases: Callable[[], str]
) -> None:
    (tmp_path / "said.md").write_text("```python\nprint(1 + 1)  # prints: 2\n```\n")
    (tmp_path / "wrong.md").write_text("```python\nprint(1 + 2)  # prints: 2\n```\n")
    (tmp_path / "unsaid.md").write_text("```python\nprint('unchecked')\n```\n")

    run_page("said.md", sqlite_databases, root=tmp_path)
    for page in ("wrong.md", "unsaid.md"):
        with pytest.raises(AssertionError, match=f"{page}:2 printed"):
            run_page(page, sqlite_databases, root=tmp_path)


def test_on_a_page_whose_blocks_stand_alone_a_block_that_leans_on_an_earlier_one_fails(
    tmp_path: Path, sqlite_databases: Callable[[], str]
) -> None:
    leaning = "```python\nanswer = 42\n```\n\n```python\nprint(answer)  # prints: 42\n```\n"
    (tmp_path / "followed.md").write_text(leaning)
    (tmp_path / "alone.md").write_text(f"{STANDALONE_MARK}\n\n{leaning}")

    run_page("followed.md", sqlite_databases, root=tmp_path)  # read in order, the second block may lean
    with pytest.raises(NameError, match="answer"):
        run_page("alone.md", sqlite_databases, root=tmp_path)


def test_the_readmes_python_blocks_each_stand_alone() -> None:
    # A reader copies any one of them: README.md says so, and the docs test then runs each on its own.
    assert stands_alone("README.md")


def test_a_documented_test_module_runs_under_pytest_beside_the_pages_files(
    tmp_path: Path, sqlite_databases: Callable[[], str]
) -> None:
    helper = "<!-- docs-test: file helper.py -->\n```python\ndef answer() -> int:\n    return 42\n```\n"
    passing = "from helper import answer\n\n\ndef test_answer() -> None:\n    assert answer() == 42\n"
    failing = passing.replace("== 42", "== 41")
    for name, module in (("passes.md", passing), ("fails.md", failing)):
        (tmp_path / name).write_text(f"{helper}\n<!-- docs-test: pytest test_it.py -->\n```python\n{module}```\n")

    run_page("passes.md", sqlite_databases, root=tmp_path)
    with pytest.raises(AssertionError, match=r"fails.md:\d+ \(test_it.py\) failed under pytest"):
        run_page("fails.md", sqlite_databases, root=tmp_path)
