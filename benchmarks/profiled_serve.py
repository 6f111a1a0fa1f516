"""`memorybank` under yappi (CPU clock, every thread): where a server's CPU time goes, by function.

    MEMORYBANK_PROFILE_OUT=profile.txt python -m benchmarks.profiled_serve serve --db URL

Runs the real command line in this process, profiling from when its port answers; when the
server stops (SIGTERM), writes a summary: the functions with the largest inclusive share of
all CPU time profiled, then the largest self share. The request path's own frames (this
repository's packages) are listed apart, so the summary reads like a flame graph folded by
function. `benchmarks.throughput mix --profile`
drives it.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import yappi

from memorybank.cli import main as memorybank_main

OUR_PACKAGES = ("memorybank", "memorybank_core", "memorybank_text", "adapters_http", "adapters_mysql", "adapters_mcp")
TOP = 40


def _ours(module: str) -> bool:
    return any(f"/{package}/" in module for package in OUR_PACKAGES)


def summarize(stats: yappi.YFuncStats) -> str:
    """The inclusive and self tables of a yappi run, as text."""
    entries = list(stats)
    total = sum(entry.tsub for entry in entries) or 1.0
    lines = [f"CPU seconds profiled: {total:.2f} (yappi, CPU clock, all threads)", ""]

    def row(entry: yappi.YFuncStat) -> str:
        where = f"{Path(entry.module).parent.name}/{Path(entry.module).name}:{entry.lineno}"
        shares = f"{100 * entry.ttot / total:6.1f}% {100 * entry.tsub / total:6.1f}%"
        return f"{shares} {entry.ncall:>9}  {entry.name}  ({where})"

    heading = f"{'incl':>7} {'self':>7} {'calls':>9}  function"
    ours = sorted((e for e in entries if _ours(e.module)), key=lambda e: e.ttot, reverse=True)
    lines += ["Our request path, by inclusive share:", heading, *(row(e) for e in ours[:TOP]), ""]
    everything = sorted(entries, key=lambda e: e.ttot, reverse=True)
    lines += ["All functions, by inclusive share:", heading, *(row(e) for e in everything[:TOP]), ""]
    by_self = sorted(entries, key=lambda e: e.tsub, reverse=True)
    lines += ["All functions, by self share:", heading, *(row(e) for e in by_self[:TOP])]
    return "\n".join(lines) + "\n"


def _keep_running(_signal: int, _frame: FrameType | None) -> None:
    # uvicorn re-raises the SIGTERM it handled once it has shut down; the summary is written after that.
    return


def _start_once_listening(port: int) -> None:
    # Start-up (imports, the MCP SDK) is not the request path, and under the profiler it is slow.
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.1)
            continue
        yappi.start(builtins=False, profile_threads=True)
        return


def run() -> int:
    """Profile `memorybank` with the arguments of this command line, from when its port answers."""
    out = Path(os.environ["MEMORYBANK_PROFILE_OUT"])
    signal.signal(signal.SIGTERM, _keep_running)
    yappi.set_clock_type("cpu")
    port = int(sys.argv[sys.argv.index("--port") + 1])
    threading.Thread(target=_start_once_listening, args=(port,), daemon=True).start()
    try:
        status = memorybank_main(sys.argv[1:])
    finally:
        yappi.stop()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(summarize(yappi.get_func_stats()))
    return status


if __name__ == "__main__":
    sys.exit(run())
