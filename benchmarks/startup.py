"""Start-up: how long a newcomer's commands take from spawn to answer, and what a readiness probe costs.

    python -m benchmarks.startup [--runs 5] [--before DIR]

Each run spawns a fresh interpreter, as a shell or an MCP client does: `memorybank --help` (to its
exit), `memorybank token create` on an SQLite file (to its exit), and `memorybank mcp` over stdio
(to the `initialize` answer on stdout). Then, in process, the readiness probe of a ready SQLite
database against the full schema check it replaced. Prints, per command, the median and worst wall
time and the median CPU time of the child (user + system): on a machine others load, the CPU time is
the steadier figure. `--before DIR` runs the same commands from another checkout too (e.g.
`git archive <commit> | tar -x -C DIR`), alternating run by run, and prints the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from benchmarks.common import machine

_USER = "usr_01h455vb4pex5vsknk084sn02q"
_ORG = "org_01h455vb4pex5vsknk084sn02q"
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def _command(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from memorybank.entry import main; sys.exit(main())", *args]


def _environment(checkout: Path, data: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout), "XDG_DATA_HOME": str(data), "MEMORYBANK_DATABASE_URL": ""}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _until_exit(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    # In the checkout: `python -c` puts the working directory first on sys.path.
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=env["PYTHONPATH"])  # noqa: S603
    return time.perf_counter() - started


def _until_initialized(command: list[str], env: dict[str, str]) -> float:
    """Seconds to the `initialize` answer (the CPU time counted after it includes the clean exit)."""
    started = time.perf_counter()
    with subprocess.Popen(  # noqa: S603 - our own interpreter
        command,
        env=env,
        cwd=env["PYTHONPATH"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as server:
        if server.stdin is None or server.stdout is None:  # pragma: no cover - both are pipes
            raise RuntimeError("no pipes to the server")
        server.stdin.write(json.dumps(_INITIALIZE) + "\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        seconds = time.perf_counter() - started
        server.stdin.close()
        server.wait(timeout=30)
    if answer.get("id") != 1 or "result" not in answer:
        raise RuntimeError(f"mcp answered {answer!r}")
    return seconds


def commands(checkout: Path, data: Path) -> dict[str, Callable[[], float]]:
    """Each command's measurement: seconds from spawn to its answer."""
    env = _environment(checkout, data)
    database = f"--db=sqlite:///{data / 'bench.sqlite3'}"
    return {
        "memorybank --help": lambda: _until_exit(_command("--help"), env),
        "memorybank token create": lambda: _until_exit(_command("token", "create", database), env),
        "memorybank mcp (initialize)": lambda: _until_initialized(
            _command("mcp", "--user", _USER, "--org", _ORG, database), env
        ),
    }


def readiness(runs: int, data: Path) -> tuple[float, float]:
    """Median seconds of the readiness probe of a ready database, and of the full check it replaced."""
    from benchmarks.common import open_bank

    with open_bank(f"sqlite:///{data / 'ready.sqlite3'}") as runtime:  # initialized and checked, as `serve` opens it
        storage = runtime.storage
        probe = [_timed(storage.probe_ready) for _ in range(runs * 20)]
        full = [_timed(storage.check_ready) for _ in range(runs)]
    return statistics.median(probe), statistics.median(full)


def _timed(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


@attrs.frozen
class Sample:
    """One command's runs: wall seconds to the answer, and the child's CPU seconds."""

    wall: list[float]
    cpu: list[float]

    def line(self) -> str:
        wall, cpu = statistics.median(self.wall), statistics.median(self.cpu)
        return f"median {wall:5.2f} s, worst {max(self.wall):5.2f} s, CPU {cpu:5.2f} s"


def _sample(measure: Callable[[], float]) -> tuple[float, float]:
    cpu_before = _children_cpu()
    wall = measure()
    return wall, _children_cpu() - cpu_before


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, help="an older checkout to compare with, in the same run")
    args = parser.parse_args(argv)
    checkouts = {"now": Path(__file__).resolve().parents[1]}
    if args.before is not None:
        checkouts = {"before": args.before.resolve(), **checkouts}
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}; {args.runs} runs each")
    with tempfile.TemporaryDirectory() as directory:
        data = Path(directory)
        measured = {name: commands(path, data / name) for name, path in checkouts.items()}
        for name, each in measured.items():
            (data / name).mkdir()
            each["memorybank token create"]()  # creates each embedded database once, outside the figures
        for command in measured["now"]:
            samples = {name: Sample([], []) for name in checkouts}
            for _ in range(args.runs):
                for name in checkouts:  # alternating, so a burst of load hits both
                    wall, cpu = _sample(measured[name][command])
                    samples[name].wall.append(wall)
                    samples[name].cpu.append(cpu)
            for name, sample in samples.items():
                print(f"{command:28} {name:6} {sample.line()}")
            if "before" in samples:
                ratio = statistics.median(samples["now"].wall) / statistics.median(samples["before"].wall)
                print(f"{command:28} now/before wall: {ratio:.2f}")
        probe, full = readiness(args.runs, data)
    print(f"{'/readyz check, ready database':28} median {probe * 1000:.2f} ms (the full check: {full * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
