"""The README's quickstart, run as written: serve, token create, curl save, curl search, a second token.

The commands are read from README.md's bash blocks; only the port differs (a free one, not 8000).
The install line is checked here against pyproject.toml and run for real in a fresh virtualenv
by the `install` tier (tests/docs/test_fresh_install.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.served import REPO_ROOT, free_port, run_shell

README = REPO_ROOT / "README.md"
DOCUMENTED_ADDRESS = "127.0.0.1:8000"


def section(title: str) -> str:
    """The README's text from the `## title` heading to the next `## ` heading."""
    text = README.read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def bash_blocks(title: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", section(title), flags=re.DOTALL)


def without_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line)


def test_the_quickstart_leads_with_an_install_from_the_clone_and_extras_that_exist() -> None:
    setup = bash_blocks("Quickstart")[0].splitlines()
    develop = bash_blocks("Develop")[0].splitlines()
    extras = re.findall(
        r"^(\w+) = \[",
        (REPO_ROOT / "pyproject.toml").read_text().split("[project.optional-dependencies]")[1].split("\n[")[0],
        flags=re.MULTILINE,
    )

    for install in (setup[0], develop[0]):
        assert install.startswith('python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[')
        named = re.search(r'pip install -e "\.\[([\w,]+)\]"', install)
        assert named
        assert set(named.group(1).split(",")) <= set(extras)
    assert without_comment(setup[1]) == "memorybank serve"
    assert len(setup) == 2
    assert develop[1:] == ["python -m pytest -n auto"]
    assert 'pip install "memorybank[server]"' in section("Quickstart")  # the index form, for once it is published
    assert 'pip install "memorybank' not in "".join(bash_blocks("Quickstart"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def shell_env(home: Path) -> dict[str, str]:
    """A reader's shell after `. .venv/bin/activate`: this interpreter's `memorybank` first on PATH."""
    home.mkdir()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYBANK_")}
    return {**environment, "HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture
def server(shell_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """The README's `memorybank serve`, as written, on a free port; yields the address it serves."""
    port = free_port()
    serve = without_comment(bash_blocks("Quickstart")[0].splitlines()[1])
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(  # noqa: S603 - the README's command, run by bash as a reader would
        ["bash", "-c", f"{serve} --port {port}"],  # noqa: S607
        cwd=tmp_path,
        env=shell_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx2.get(f"http://{address}/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"memorybank serve did not answer: {(tmp_path / 'serve.log').read_text()[-2000:]}")
        yield address
    finally:
        process.terminate()
        process.wait(timeout=15)
        log.close()


def run_block(block: str, address: str, shell_env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_shell(block.replace(DOCUMENTED_ADDRESS, address), cwd=cwd, env=shell_env)


def json_documents(text: str) -> list[Any]:
    """The JSON documents curl printed one after another, without separators."""
    decoder, documents, position = json.JSONDecoder(), [], 0
    while position < len(text.strip()):
        document, position = decoder.raw_decode(text, position)
        documents.append(document)
    return documents


def test_the_readme_quickstart_saves_and_finds_a_memory_then_a_second_token_sees_it(
    server: str, shell_env: dict[str, str], tmp_path: Path
) -> None:
    first, second = bash_blocks("Quickstart")[1:3]

    ran = run_block(first, server, shell_env, tmp_path)

    assert ran.returncode == 0, ran.stderr
    saved, found = json_documents(ran.stdout)
    assert saved["memory"]["content"] == "The staging database lives in eu-west-1"
    assert saved["memory"]["tags"] == ["infra"]
    assert [result["id"] for result in found["results"]] == [saved["memory"]["id"]]
    ids = re.search(r"created a NEW user (usr_\w+) \(organization (org_\w+)\)", ran.stderr)
    assert ids, ran.stderr

    # The second block, with the ids the first token create printed in place of `usr_…` and `org_…`.
    again = run_block(second.replace("usr_…", ids.group(1)).replace("org_…", ids.group(2)), server, shell_env, tmp_path)

    assert again.returncode == 0, again.stderr
    assert "NEW" not in again.stderr
    secrets = [line for line in again.stdout.splitlines() if line.startswith("mbk_")]
    assert len(secrets) == 2
    reader = httpx2.get(
        f"http://{server}/v1/memory/search",
        params={"q": "where is staging"},
        headers={"Authorization": f"Bearer {secrets[1]}"},
        timeout=10,
    )
    assert [result["id"] for result in reader.json()["results"]] == [saved["memory"]["id"]]
