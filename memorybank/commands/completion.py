"""`memorybank completion bash|zsh|tcsh`: a shell completion script, generated from the argument parser itself.

shtab writes a static script from argparse (every command, flag and choice, as `--help` knows them), so
pressing TAB runs no Python: `memorybank` imports its commands in about 0.2 s, which argcomplete would pay on
every key press. The script is regenerated from the parser, so it never drifts from the flags.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from memorybank.commands.base import Shared, Subcommands
from memorybank.settings import Settings

#: The shells shtab writes scripts for that we document (docs/operations.md, Shell completion).
SHELLS = ("bash", "zsh", "tcsh")


def register(commands: Subcommands, _shared: Shared) -> None:
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or tcsh)",
        description="Print a completion script for your shell, generated from this command's own options. "
        'bash: `eval "$(memorybank completion bash)"` in ~/.bashrc; zsh: `memorybank completion zsh > '
        '"${fpath[1]}/_memorybank"`; see docs/operations.md, Shell completion.',
    )
    completion.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    completion.set_defaults(run=run_completion, db=None)


def run_completion(args: argparse.Namespace, _settings: Settings, out: TextIO) -> None:
    import shtab  # only this command needs it

    from memorybank.cli import build_parser

    out.write(shtab.complete(build_parser(args.environment), shell=args.shell))
