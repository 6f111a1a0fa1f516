"""The Python examples of README.md and docs/**/*.md, and the conventions that make them checkable.

Every block runs **as written**, as a reader runs it on a fresh machine after the README's install
(`pip install -e ".[server]"`): in an empty working directory of its own (relative paths such as
`sqlite:///memorybank.sqlite3` land there), with only the README's extras importable. What a block
needs beyond that, it says on the line before its fence, and the docs test runs it that way:

- `<!-- docs-test: needs mysql extra -->` (any extra of pyproject.toml; several joined by commas):
  the modules of that extra are importable for this block. Without the mark they are not
  (`EXTRA_MODULES`), so a block that quietly needs `pip install 'memorybank[mysql]'` fails.
- `<!-- docs-test: needs mysql server -->`: every MySQL URL in the block is pointed at a fresh
  database on the test server, migrated as `memorybank migrate` leaves it (the reader points it at
  theirs). A page with such a block runs whole in the mysql tier (`-m mysql`), never in the default one.
  Combine: `<!-- docs-test: needs mysql extra, mysql server -->`.

Other conventions:

- The blocks of one page run in order in one namespace, as a reader follows them; a page whose
  example continues another page's says so on the line before its first block:
  `<!-- docs-test: after docs/embedding.md -->` (that page's blocks run first).
- A page whose blocks each claim to work alone (a reader copies any one of them) says
  `<!-- docs-test: blocks stand alone -->` anywhere in it: then every block runs in a fresh
  namespace and directory, so one that leans on an earlier block fails.
- A `# prints: TEXT` comment states one line the block prints; the printed lines must be exactly
  these, in order. A block that prints without saying what is a failure: output nobody checks drifts.
- A block that is a file the reader saves, not runs, is marked `<!-- docs-test: file NAME.py -->`:
  it is written to NAME.py in a folder of the page's own. One marked `<!-- docs-test: pytest
  test_NAME.py -->` is a test module: written there too, then run by pytest in a fresh process (as
  the reader runs it, beside the page's other files), and every test it collects must pass.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from harness.served import REPO_ROOT

_NEEDS_MARK = re.compile(r"<!-- docs-test: needs (.+?) -->")
_FILE_MARK = re.compile(r"<!-- docs-test: (file|pytest) ([\w.]+\.py) -->")
#: A pytest run's summary line: "12 passed in 3.40s", with no failure, error or skip beside it.
_ALL_PASSED = re.compile(r"^=* ?(\d+) passed in [\d.]+s", re.MULTILINE)
PYTEST_TIMEOUT_SECONDS = 300
_AFTER_MARK = re.compile(r"<!-- docs-test: after (\S+) -->")
STANDALONE_MARK = "<!-- docs-test: blocks stand alone -->"
_FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_PRINTS = re.compile(r"#\s*prints:\s?(.*)$", re.MULTILINE)
#: A MySQL URL as the docs write them, in quotes: `mysql://…`, `mysql+pymysql://…`.
_MYSQL_URL = re.compile(r"""(?<=["'])mysql(?:\+\w+)?://[^"']*(?=["'])""")

#: The extras the README's install brings (`pip install -e ".[server]"`): what a block may import unmarked.
README_EXTRA = "server"
#: The modules each extra beyond the README's install brings, and ours that import them at import time:
#: made unimportable while a block that does not say it needs the extra runs.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "mysql": ("MySQLdb",),
    "testing": ("hypothesis", "memorybank_testing"),
}
#: The servers a block may need, each run by its own tier (the pytest marker of that tier).
SERVERS = ("mysql",)


@attrs.frozen
class Example:
    """One ```python block: where it is, its source, what it says it prints, and what it needs."""

    page: str
    line: int
    source: str
    #: `semantic extra`, `mysql server`...: what the block needs beyond the README's install.
    needs: frozenset[str] = frozenset()
    #: The file name a `file` or `pytest` block is saved as; None for a block that runs in the page.
    saved_as: str | None = None
    runs_pytest: bool = False

    @property
    def expected_output(self) -> list[str]:
        return _PRINTS.findall(self.source)

    @property
    def servers(self) -> frozenset[str]:
        return frozenset(need.removesuffix(" server") for need in self.needs if need.endswith(" server"))

    @property
    def extras(self) -> frozenset[str]:
        return frozenset(need.removesuffix(" extra") for need in self.needs if need.endswith(" extra"))

    def with_mysql(self, url: str) -> str:
        """The source with every MySQL URL replaced by `url`."""
        return _MYSQL_URL.sub(url, self.source)


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
        needs = _NEEDS_MARK.fullmatch(before)
        found.append(
            Example(
                page=page,
                line=text.count("\n", 0, match.start()) + 2,
                source=match.group(1),
                needs=frozenset(need.strip() for need in needs.group(1).split(",")) if needs else frozenset(),
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
    page: str,
    *,
    root: Path = REPO_ROOT,
    namespace: dict[str, Any] | None = None,
    mysql_url: Callable[[], str] | None = None,
    folder: Path | None = None,
) -> dict[str, Any]:
    """Run the page's examples (after its prerequisite's) in one namespace and one directory; return it.

    `folder` is the reader's empty working directory (default: a temporary one, removed after); a caller
    that checks what the page built afterwards passes its own and works in it too (relative paths).

    Each block runs as written, with only the README's extras and those it says it needs importable.
    `mysql_url` is called once per page with a block that needs a MySQL server, for a fresh migrated
    database. On a page whose blocks stand alone, each block runs in a namespace and directory of its own;
    the namespace returned then holds what every block defined, for the checks that follow (embeddings.py).

    Raises:
        AssertionError: a block printed something else than its `# prints:` comments say, or needs a
            server `mysql_url` does not give.
    """
    names: dict[str, Any] = {"__name__": "__docs__"} if namespace is None else namespace
    before = prerequisite(page, root)
    alone = stands_alone(page, root)
    assert not (alone and before is not None), f"{page}: blocks that stand alone continue no other page"
    with contextlib.ExitStack() as stack:
        where = folder or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="docs-files-")))
        if before is not None:
            run_page(before, root=root, namespace=names, mysql_url=mysql_url, folder=where)
        url: str | None = None
        for example in examples(page, root):
            if example.saved_as is not None:
                _save_and_test(example, where)
                continue
            if alone:
                own: dict[str, Any] = {"__name__": "__docs__"}
                with tempfile.TemporaryDirectory(prefix="docs-block-") as own_folder:
                    _run_block(example, own, Path(own_folder), mysql_url, None)
                names.update(own)
            else:
                url = _run_block(example, names, where, mysql_url, url)
    return names


def _run_block(
    example: Example, names: dict[str, Any], folder: Path, mysql_url: Callable[[], str] | None, url: str | None
) -> str | None:
    """Run one block in the page's namespace, in `folder`; return the page's MySQL URL (made on first need)."""
    page = example.page
    source = example.source
    if "mysql" in example.servers:
        assert mysql_url is not None, f"{page}:{example.line} needs a MySQL server: it runs in the mysql tier"
        url = url or mysql_url()
        source = example.with_mysql(url)
    printed = io.StringIO()
    with _working_in(folder), _only_extras(example.extras), contextlib.redirect_stdout(printed):
        exec(compile(source, f"{page}:{example.line}", "exec"), names)  # noqa: S102 - our own docs
    actual, said = printed.getvalue().splitlines(), example.expected_output
    assert actual == said, f"{page}:{example.line} printed {actual!r}; the page says {said!r}"
    return url


@contextlib.contextmanager
def _working_in(folder: Path) -> Iterator[None]:
    """`folder` as the working directory: relative paths in a block land there, as in a reader's empty one."""
    previous = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


@contextlib.contextmanager
def _only_extras(needed: frozenset[str]) -> Iterator[None]:
    """The modules of every extra beyond the README's install and `needed` made unimportable, as on a reader's
    machine; those loaded already are hidden too (`sys.modules[name] = None` makes `import name` fail)."""
    unknown = needed - set(EXTRA_MODULES) - {README_EXTRA}
    assert not unknown, f"no such extra in EXTRA_MODULES: {sorted(unknown)}"
    hidden = [name for extra, names in EXTRA_MODULES.items() if extra not in needed for name in names]
    saved = {
        loaded: module
        for loaded, module in sys.modules.items()
        if any(loaded == name or loaded.startswith(name + ".") for name in hidden)
    }
    for name in [*hidden, *saved]:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in hidden:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


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


def servers_of(page: str, root: Path = REPO_ROOT) -> frozenset[str]:
    """The servers the page's blocks (and its prerequisite's) need: the tier that runs the page."""
    before = prerequisite(page, root)
    own = frozenset(server for example in examples(page, root) for server in example.servers)
    return own | (servers_of(before, root) if before is not None else frozenset())


def python_pages() -> list[str]:
    """The pages with at least one python block."""
    return [page for page in pages() if examples(page)]
