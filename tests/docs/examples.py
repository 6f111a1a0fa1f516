"""The Python examples of README.md and docs/**/*.md, and the conventions that make them checkable.

- Every ```python block runs. The blocks of one page run in order in one namespace, as a reader
  follows them; a page whose example continues another page's says so on the line before its
  first block: `<!-- docs-test: after docs/embedding.md -->` (that page's blocks run first).
- A page whose blocks each claim to work alone (a reader copies any one of them) says
  `<!-- docs-test: blocks stand alone -->` anywhere in it: then every block runs in a fresh
  namespace, on a fresh database, so one that leans on an earlier block fails.
- A `# prints: TEXT` comment states one line the block prints; the printed lines must be exactly
  these, in order. A block that prints without saying what is a failure: output nobody checks drifts.
- A block that opens a database by URL is marked `<!-- docs-test: database -->` on the line before
  it. Every database URL in it is then pointed at a prepared database (created and migrated, as
  `memorybank migrate` leaves it): an SQLite file in the default tier, MariaDB in the mysql tier.
- A block that is a file the reader saves, not runs, is marked `<!-- docs-test: file NAME.py -->`:
  it is written to NAME.py in a folder of the page's own. One marked `<!-- docs-test: pytest
  test_NAME.py -->` is a test module: written there too, then run by pytest in a fresh process (as
  the reader runs it, beside the page's other files), and every test it collects must pass.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from harness.served import REPO_ROOT

DATABASE_MARK = "<!-- docs-test: database -->"
_FILE_MARK = re.compile(r"<!-- docs-test: (file|pytest) ([\w.]+\.py) -->")
#: A pytest run's summary line: "12 passed in 3.40s", with no failure, error or skip beside it.
_ALL_PASSED = re.compile(r"^=* ?(\d+) passed in [\d.]+s", re.MULTILINE)
PYTEST_TIMEOUT_SECONDS = 300
_AFTER_MARK = re.compile(r"<!-- docs-test: after (\S+) -->")
STANDALONE_MARK = "<!-- docs-test: blocks stand alone -->"
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
    #: The file name a `file` or `pytest` block is saved as; None for a block that runs in the page.
    saved_as: str | None = None
    runs_pytest: bool = False

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
        saved = _FILE_MARK.fullmatch(before)
        found.append(
            Example(
                page=page,
                line=text.count("\n", 0, match.start()) + 2,
                source=match.group(1),
                needs_database=before == DATABASE_MARK,
                saved_as=saved.group(2) if saved else None,
                runs_pytest=saved is not None and saved.group(1) == "pytest",
            )
        )
    return found


def prerequisite(page: str, root: Path = REPO_ROOT) -> str | None:
    """The page whose examples this page's examples continue, if it says so."""
    match = _AFTER_MARK.search((root / page).read_text())
    return match.group(1) if match else None


def stands_alone(page: str, root: Path = REPO_ROOT) -> bool:
    """Whether each of the page's blocks must run on its own (`STANDALONE_MARK`)."""
    return STANDALONE_MARK in (root / page).read_text()


def fence_count(page: str) -> int:
    """How many ```python fences the page opens (to check that none escapes `examples`)."""
    return len(re.findall(r"^```python$", (REPO_ROOT / page).read_text(), flags=re.MULTILINE))


def run_page(
    page: str, database_url: Callable[[], str], *, root: Path = REPO_ROOT, namespace: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run the page's examples (after its prerequisite's) in one namespace; return it.

    `database_url` is called once per page that needs a database, for a fresh, migrated one. On a page
    whose blocks stand alone, each block runs in a namespace and on a database of its own instead; the
    namespace returned then holds what every block defined, for the checks that follow (embeddings.py).

    Raises:
        AssertionError: a block printed something else than its `# prints:` comments say.
    """
    names: dict[str, Any] = {"__name__": "__docs__"} if namespace is None else namespace
    before = prerequisite(page, root)
    alone = stands_alone(page, root)
    assert not (alone and before is not None), f"{page}: blocks that stand alone continue no other page"
    if before is not None:
        run_page(before, database_url, root=root, namespace=names)
    url: str | None = None
    with tempfile.TemporaryDirectory(prefix="docs-files-") as folder:
        for example in examples(page, root):
            if example.saved_as is not None:
                _save_and_test(example, Path(folder))
                continue
            if alone:
                own: dict[str, Any] = {"__name__": "__docs__"}
                _run_block(example, own, database_url, None)
                names.update(own)
            else:
                url = _run_block(example, names, database_url, url)
    return names


def _run_block(example: Example, names: dict[str, Any], database_url: Callable[[], str], url: str | None) -> str | None:
    """Run one block in the page's namespace; return the page's database URL (made on first need)."""
    page = example.page
    source = example.source
    if example.needs_database:
        url = url or database_url()
        source = example.with_database(url)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, f"{page}:{example.line}", "exec"), names)  # noqa: S102 - our own docs
    actual, said = printed.getvalue().splitlines(), example.expected_output
    assert actual == said, f"{page}:{example.line} printed {actual!r}; the page says {said!r}"
    return url


def _save_and_test(example: Example, folder: Path) -> None:
    """Write a `file`/`pytest` block into the page's folder; run pytest on a test module there."""
    assert example.saved_as is not None
    (folder / example.saved_as).write_text(example.source)
    if not example.runs_pytest:
        return
    # An empty ini file pins pytest's rootdir to the folder: none of this checkout's settings apply.
    (folder / "pytest.ini").write_text("[pytest]\n")
    finished = subprocess.run(  # noqa: S603 - our own interpreter, on our own docs
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", example.saved_as],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=PYTEST_TIMEOUT_SECONDS,
        check=False,
    )
    where = f"{example.page}:{example.line} ({example.saved_as})"
    assert finished.returncode == 0, f"{where} failed under pytest:\n{finished.stdout[-4000:]}{finished.stderr[-2000:]}"
    assert _ALL_PASSED.search(finished.stdout), f"{where} did not pass whole:\n{finished.stdout[-2000:]}"


def database_pages() -> list[str]:
    """The pages with a block marked as needing a database."""
    return [page for page in pages() if any(example.needs_database for example in examples(page))]


def python_pages() -> list[str]:
    """The pages with at least one python block."""
    return [page for page in pages() if examples(page)]
