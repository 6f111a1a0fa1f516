"""The wheel a user installs: built from the sdist, installed (not editable) into a clean virtualenv,
it migrates, serves, saves, searches and serves the panel page, and its install hint works as printed;
with its `testing` extra, a host's own store passes the shipped contract suite (docs/embedding.md).

Slow (a build and a pip install), so it is in the install tier: `python -m pytest -m install`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import httpx2
import pytest

from adapters_mysql.revisions import SCRIPTS_PACKAGE
from harness.served import REPO_ROOT, serving
from tests.docs.examples import examples

pytestmark = pytest.mark.install

STEP_TIMEOUT_SECONDS = 600
#: The page whose toy store and test module a host copies to prove its own store.
CONTRACT_PAGE = "docs/embedding.md"
#: Every top-level package the wheel ships (pyproject.toml lists them): each carries a py.typed marker.
TYPED = [
    package
    for package in tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    if "." not in package
]


def _run(argv: list[str | Path], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreters and commands
        [str(arg) for arg in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_SECONDS,
        check=False,
    )


def _copy_of_the_checkout(target: Path) -> Path:
    """The files git tracks or would track, as they are now: the build must not write into the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],  # noqa: S607
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _check_the_wheel_ships_everything(wheel: Path, sdist: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    migrations = sorted(
        str(path.relative_to(REPO_ROOT / "migrations"))
        for path in (REPO_ROOT / "migrations").rglob("*")
        if path.is_file() and path.suffix in {".py", ".mako"}
    )
    installed_at = SCRIPTS_PACKAGE.replace(".", "/")
    assert sorted(name for name in migrations if f"{installed_at}/{name}" not in names) == []
    assert "adapters_mysql/migrations/versions/0001_memory_tables.py" in names
    static = sorted(path.name for path in (REPO_ROOT / "adapters_http/panel/static").iterdir())
    assert [name for name in static if f"adapters_http/panel/static/{name}" not in names] == []
    assert [package for package in TYPED if f"{package}/py.typed" not in names] == []
    assert not [name for name in names if name.split("/")[0] in {"tests", "benchmarks", "harness", "migrations"}]
    with tarfile.open(sdist) as archive:
        in_sdist = {name.partition("/")[2] for name in archive.getnames()}
    assert {"migrations/env.py", "migrations/script.py.mako", "memorybank_testing/py.typed"} <= in_sdist


def test_the_wheel_installs_in_a_clean_virtualenv_and_serves_saves_searches_and_the_panel(tmp_path: Path) -> None:
    # A shell without this test run's virtualenv or any MEMORYBANK_ setting; pip keeps its cache.
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if ".venv" not in p)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYBANK_", "VIRTUAL_ENV", "PYTHON"))}
    env = {**clean, "PATH": path}
    source = _copy_of_the_checkout(tmp_path / "source")
    dist = tmp_path / "dist"

    # `python -m build`: the sdist, then the wheel built from that sdist (so the sdist is complete too).
    built = _run([sys.executable, "-m", "build", "--outdir", dist, source], cwd=tmp_path, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    # No setuptools warning banner either (issue 28: two "Package would be ignored" for the data folders).
    assert "Package would be ignored" not in built.stdout + built.stderr
    [wheel], [sdist] = list(dist.glob("*.whl")), list(dist.glob("*.tar.gz"))
    _check_the_wheel_ships_everything(wheel, sdist)

    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", venv], cwd=tmp_path, env=env).returncode == 0
    python, memorybank = venv / "bin" / "python", venv / "bin" / "memorybank"
    in_venv = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{path}", "VIRTUAL_ENV": str(venv)}
    elsewhere = tmp_path / "elsewhere"  # not the checkout: nothing may be imported from it
    elsewhere.mkdir()
    bare = _run([python, "-m", "pip", "install", "-q", wheel], cwd=elsewhere, env=in_venv)
    assert bare.returncode == 0, bare.stderr[-3000:]

    # Without the extras, a command prints how to add them; that very command works.
    refused = _run([memorybank, "serve"], cwd=elsewhere, env=in_venv)
    assert refused.returncode == 1
    hint = refused.stderr.strip().rpartition("which is not installed: ")[2]
    assert hint == f"pip install '{wheel}[server]'", refused.stderr
    extras = _run(["bash", "-c", hint], cwd=elsewhere, env=in_venv)
    assert extras.returncode == 0, extras.stderr[-3000:]

    where = _run([python, "-c", "import adapters_mysql.migrations as m; print(m.__file__)"], cwd=elsewhere, env=env)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr
    database = f"sqlite:///{elsewhere / 'bank.sqlite3'}"
    migrated = _run([memorybank, "migrate", "--db", database], cwd=elsewhere, env=in_venv)
    assert migrated.returncode == 0, migrated.stderr
    created = _run([memorybank, "token", "create", "--db", database], cwd=elsewhere, env=in_venv)
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip().splitlines()[-1]
    assert token.startswith("mbk_")

    log = tmp_path / "serve.log"
    # The default search (hybrid: the server extra brings the model), not the test run's lexical one.
    served_env = {**in_venv, "MEMORYBANK_SEARCH": ""}
    with serving(database, env=served_env, log=log, python=str(python), cwd=elsewhere) as server:
        bearer = {"Authorization": f"Bearer {token}"}
        saved = httpx2.post(
            f"{server.base_url}/v1/memory", json={"content": "The wheel serves from site-packages"}, headers=bearer
        )
        assert saved.status_code == 201, saved.text
        found = httpx2.get(f"{server.base_url}/v1/memory/search", params={"q": "wheel"}, headers=bearer)
        assert [result["id"] for result in found.json()["results"]] == [saved.json()["memory"]["id"]]
        flight = httpx2.post(
            f"{server.base_url}/v1/memory",
            json={"content": "The flight to Lisbon departs at 7:40 on Friday"},
            headers=bearer,
        )
        meant = httpx2.get(
            f"{server.base_url}/v1/memory/search", params={"q": "when does my plane to Portugal leave?"}, headers=bearer
        )
        assert [(r["id"], r["match"]) for r in meant.json()["results"]] == [(flight.json()["memory"]["id"], "meaning")]
        page = httpx2.get(f"{server.base_url}/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        # The page names its CSS, ES modules and icon relative to itself: each comes from the wheel.
        assets = sorted(set(re.findall(r"""["']/?(panel/assets/[\w.-]+)["']""", page.text)))
        assert len(assets) >= 3, page.text[:1000]
        for asset in assets:
            answered = httpx2.get(f"{server.base_url}/{asset}")
            assert (asset, answered.status_code) == (asset, 200)
    assert "search: hybrid (BM25 fused with all-MiniLM-L6-v2-int8" in log.read_text()

    _check_the_contract_suite_runs_from_the_wheel(wheel, python, in_venv, elsewhere / "host")


def _check_the_contract_suite_runs_from_the_wheel(wheel: Path, python: Path, env: dict[str, str], host: Path) -> None:
    """docs/embedding.md's toy store and its test module, run by the venv's pytest with `[testing]` installed."""
    testing = _run([python, "-m", "pip", "install", "-q", f"{wheel}[testing]"], cwd=host.parent, env=env)
    assert testing.returncode == 0, testing.stderr[-3000:]
    where = _run([python, "-c", "import memorybank_testing as m; print(m.__file__)"], cwd=host.parent, env=env)
    assert where.stdout.startswith(env["VIRTUAL_ENV"]), where.stdout + where.stderr
    host.mkdir()
    module = ""
    for example in examples(CONTRACT_PAGE):
        if example.saved_as is not None:
            (host / example.saved_as).write_text(example.source)
            module = example.saved_as if example.runs_pytest else module
    assert module, f"{CONTRACT_PAGE} no longer holds the contract suite's test module"
    # An empty ini file pins pytest's rootdir to the host's folder: none of this checkout's settings apply.
    (host / "pytest.ini").write_text("[pytest]\n")
    ran = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", module], cwd=host, env=env)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    # Every contract passed: nothing skipped, nothing failed beside them.
    assert re.search(r"^=* ?\d+ passed in [\d.]+s", ran.stdout, re.MULTILINE), ran.stdout[-2000:]
