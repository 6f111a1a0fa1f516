"""The Python examples of README.md and docs/**/*.md, and the conventions that make them checkable.

- Every ```python block runs. The blocks of one page run in order in one namespace, as a reader
  follows them; a page whose example continues another page's says so on the line before its
  first block: `<!-- docs-test: after docs/embedding.md -->` (that page's blocks run first).
- A `# prints: TEXT` comment states one line the block prints; the printed lines must be exactly
  these, in order. A block that prints without saying what is a failure: output nobody checks drifts.
- A block that opens a database by URL is marked `<!-- docs-test: database -->` on the line before
  it. Every database URL in it is then pointed at a prepared database (created and migrated, as
  `memorybank migrate` leaves it): an SQLite file in the default tier, MariaDB in the mysql tier.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from tests.served import REPO_ROOT

DATABASE_MARK = "<!-- docs-test: database -->"
_AFTER_MARK = re.compile(r"<!-- docs-test: after (\S+) -->")
_FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_PRINTS = re.compile(r"#\s*prints:\s?(.*)$", re.MULTILINE)
#: A database URL as the docs write them, in quotes: `mysql://…`, `mysql+mysqldb://…`, `sqlite:///…`.
_DATABASE_URL = re.compile(r"""(?<=["'])(?:mysql|sqlite)(?:\+\w+)?://[^"']*(?=["'])""")


@attrs.frozen
class Example:
    """One ```python block: where it is, its source, and what it says it prints."""

    page: str
    line: int
    source: str
    needs_database: bool

    @property
    def expected_output(self) -> list[str]:
        return _PRINTS.findall(self.source)

    def with_database(self, url: str) -> str:
        """The source with every database URL replaced by `url`."""
        return _DATABASE_URL.sub(url, self.source)


def pages() -> list[str]:
    """README.md and every page under docs/, as repository-relative paths."""
    found = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    return [str(path.relative_to(REPO_ROOT)) for path in found]


def examples(page: str, root: Path = REPO_ROOT) -> list[Example]:
    """The page's python blocks, in order."""
    text = (root / page).read_text()
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        found.append(
            Example(
                page=page,
                line=text.count("\n", 0, match.start()) + 2,
                source=match.group(1),
                needs_database=before == DATABASE_MARK,
            )
        )
    return found


def prerequisite(page: str, root: Path = REPO_ROOT) -> str | None:
    """The page whose examples this page's examples continue, if it says so."""
    match = _AFTER_MARK.search((root / page).read_text())
    return match.group(1) if match else None


def fence_count(page: str) -> int:
    """How many ```python fences the page opens (to check that none escapes `examples`)."""
    return len(re.findall(r"^```python$", (REPO_ROOT / page).read_text(), flags=re.MULTILINE))


def run_page(
    page: str, database_url: Callable[[], str], *, root: Path = REPO_ROOT, namespace: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run the page's examples (after its prerequisite's) in one namespace; return it.

    `database_url` is called once per page that needs a database, for a fresh, migrated one.

    Raises:
        AssertionError: a block printed something else than its `# prints:` comments say.
    """
    names: dict[str, Any] = {"__name__": "__docs__"} if namespace is None else namespace
    before = prerequisite(page, root)
    if before is not None:
        run_page(before, database_url, root=root, namespace=names)
    url: str | None = None
    for example in examples(page, root):
        source = example.source
        if example.needs_database:
            url = url or database_url()
            source = example.with_database(url)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(source, f"{page}:{example.line}", "exec"), names)  # noqa: S102 - our own docs
        actual, said = printed.getvalue().splitlines(), example.expected_output
        assert actual == said, f"{page}:{example.line} printed {actual!r}; the page says {said!r}"
    return names


def database_pages() -> list[str]:
    """The pages with a block marked as needing a database."""
    return [page for page in pages() if any(example.needs_database for example in examples(page))]


def python_pages() -> list[str]:
    """The pages with at least one python block."""
    return [page for page in pages() if examples(page)]
