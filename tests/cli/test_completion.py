"""`memorybank completion bash|zsh|tcsh`: a static script from the parser that completes commands, flags and choices."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from memorybank.settings import DECLARED
from tests.cli.conftest import Run


def _complete(script: Path, *words: str) -> list[str]:
    """What bash offers after `words` (the last one being completed), with the script sourced."""
    quoted = " ".join(f"'{word}'" for word in words)
    program = f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _shtab_memorybank; "
    program += 'printf "%s\\n" "${COMPREPLY[@]}"'
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run([bash, "-c", program], capture_output=True, text=True, check=True)  # noqa: S603
    return done.stdout.split()


def test_the_bash_script_completes_commands_declared_flags_and_their_choices(run: Run, tmp_path: Path) -> None:
    printed = run("completion", "bash")
    assert printed.status == 0, printed.err
    script = tmp_path / "memorybank.bash"
    script.write_text(printed.out)

    assert _complete(script, "memorybank", "se") == ["serve", "secrets"]
    assert _complete(script, "memorybank", "serve", "--log-format", "") == ["text", "json"]
    offered = _complete(script, "memorybank", "serve", "--")
    assert {s.flag for s in DECLARED if s.takes("serve")} <= set(offered)


@pytest.mark.parametrize("shell", ["zsh", "tcsh"])
def test_the_other_shells_get_a_script_too(run: Run, shell: str) -> None:
    printed = run("completion", shell)

    assert printed.status == 0
    assert "memorybank" in printed.out
    assert "hybrid-min-similarity" in printed.out


def test_an_unknown_shell_is_one_line_naming_the_choices(run: Run) -> None:
    refused = run("completion", "powershell")

    assert refused.status == 2
    assert "invalid choice: 'powershell'" in refused.err
