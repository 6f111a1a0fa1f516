"""The repository's Containerfile, checked statically (no container runtime on the test machines; issue 28, 8).

What it must say: a base image pinned to a full patch version of a Python this project supports, the
README's install (the `server` extra), a user that is not root for everything after the install, and
an entry point that is this package's console script running a real command.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib

from harness.served import REPO_ROOT
from memorybank.cli import build_parser

CONTAINERFILE = REPO_ROOT / "Containerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", CONTAINERFILE.read_text())
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, arguments = stripped.partition(" ")
            found.append((keyword.upper(), arguments.strip()))
    return found


def _one(keyword: str) -> str:
    [value] = [arguments for name, arguments in _instructions() if name == keyword]
    return value


def test_the_base_image_is_pinned_to_a_python_this_project_supports() -> None:
    base = _one("FROM")
    image, _, tag = base.partition("@")[0].rpartition(":")
    version = re.match(r"(\d+)\.(\d+)\.(\d+)-", tag)

    assert image.endswith("python"), base
    assert version is not None, f"{base}: a full patch version, never a moving tag"
    floor = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert (int(version.group(1)), int(version.group(2))) >= tuple(int(part) for part in floor.lstrip(">=").split("."))


def test_it_installs_the_readmes_extra() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    readme_extras = re.search(r'pip install -e "\.\[(\w+)\]"', readme)
    assert readme_extras is not None
    installs = [arguments for name, arguments in _instructions() if name == "RUN" and "pip install" in arguments]

    assert len(installs) == 1
    assert f'[{readme_extras.group(1)}]"' in installs[0]


def test_everything_after_the_install_runs_as_a_user_that_is_not_root() -> None:
    names = [name for name, _ in _instructions()]
    user = _one("USER")

    assert user.split(":")[0] not in {"root", "0"}
    assert names.index("USER") > max(i for i, (name, args) in enumerate(_instructions()) if name == "RUN")
    # The uid it runs as is the one the image created.
    assert any(f"--uid {user.split(':')[0]}" in args for name, args in _instructions() if name == "RUN")


def test_the_entry_point_is_our_console_script_running_a_real_command() -> None:
    entry, command = json.loads(_one("ENTRYPOINT")), json.loads(_one("CMD"))
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]

    assert entry == ["memorybank"]
    assert entry[0] in scripts
    assert build_parser({}).parse_args(command).command == "serve"
    health = json.loads(_one("HEALTHCHECK").partition("CMD ")[2])
    assert "/healthz" in shlex.join(health)


def test_the_build_context_leaves_out_the_virtualenv_and_the_git_directory() -> None:
    ignored = (REPO_ROOT / ".dockerignore").read_text().splitlines()

    assert {".venv", ".git"} <= set(ignored)
