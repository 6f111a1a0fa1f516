"""Every `memorybank …` command line in the README's and the docs' shell blocks is one this memorybank takes.

The shell blocks start servers and talk to them, so they are not run here (the install tier runs the
README's); what can drift silently is the command line itself: a renamed flag, a command that moved,
an option one command takes and another does not (`serve --version` was refused). Each is parsed with
the real parser.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex

import pytest

from harness.served import REPO_ROOT
from memorybank.cli import build_parser
from tests.docs.examples import pages

_SHELL_BLOCK = re.compile(r"^```(?:bash|sh)\n(.*?)^```", re.S | re.M)
#: What ends one command of a shell line: a pipe, a list operator, `&`, or a command substitution's edges.
_SEPARATOR = re.compile(r"\|\|?|&&|;|&|\$\(|\)")
#: A redirection, and what it names: not an argument of the command.
_REDIRECTION = re.compile(r"\s[0-9]?(?:>>?|<)\s*\S+")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


def command_lines() -> list[tuple[str, str]]:
    """(page, command) for each `memorybank …` command of a bash or sh block, as a shell would split it out."""
    found = []
    for page in pages():
        for block in _SHELL_BLOCK.finditer((REPO_ROOT / page).read_text()):
            for line in block.group(1).replace("\\\n", " ").splitlines():
                code = _REDIRECTION.sub("", re.sub(r"(^|\s)#.*", "", line))
                for command in _SEPARATOR.split(code):
                    words = command.split()
                    while words and _ASSIGNMENT.match(words[0]):
                        words = words[1:]  # `MEMORYBANK_X=... memorybank serve`
                    if words and words[0].rsplit("/", 1)[-1] == "memorybank":
                        found.append((page, " ".join(["memorybank", *words[1:]])))
    return found


def test_the_docs_have_command_lines_to_check() -> None:
    assert len(command_lines()) > 40


@pytest.mark.parametrize(("page", "command"), command_lines())
def test_each_documented_command_line_parses(page: str, command: str) -> None:
    errors = io.StringIO()
    status: object = 0
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            build_parser({}).parse_args(shlex.split(command)[1:])
    except SystemExit as exit_:  # argparse's way of refusing (or of answering --help)
        status = exit_.code
    assert not status, f"{page}: `{command}`: {errors.getvalue().strip()}"
