"""CPU time of processes, read from /proc (Linux): who used the cores during a load test."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import attrs

_TICKS = os.sysconf("SC_CLK_TCK")
_PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces; everything after its closing parenthesis is numeric.
    return raw[raw.rindex(")") + 2 :].split()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one live process (0 once it has exited)."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    # After the name: state(0) ppid(1) ... utime(11) stime(12).
    return (int(fields[11]) + int(fields[12])) / _TICKS


def thread_cpu_seconds(pid: int) -> float:
    """CPU seconds the live threads of `pid` have run, to the nanosecond (/proc/PID/task/*/schedstat).

    Finer than `cpu_seconds` (clock ticks of 10 ms) for a few hundred short requests; a thread that
    exited meanwhile takes its time with it, so measure over spans where the threads stay (a server's pool).
    """
    total = 0
    try:
        tasks = list((_PROC / str(pid) / "task").iterdir())
    except OSError:
        return 0.0
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's waited-for children so far (e.g. a finished wrk)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def descendants(pid: int) -> list[int]:
    """`pid` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(children.get(current, []))
    return found


def listening_pid(port: int) -> int | None:
    """The process listening on TCP `port` (IPv4 or IPv6), found through its socket inode."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            columns = line.split()
            local, state, inode = columns[1], columns[3], columns[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{inode}]")
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            descriptors = list((entry / "fd").iterdir())
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(descriptor) in inodes:
                    return int(entry.name)
            except OSError:
                continue
    return None


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (everything but idle and I/O wait)."""
    values = [int(value) for value in (_PROC / "stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / _TICKS


@attrs.frozen
class CpuSnapshot:
    """CPU seconds used so far by the app (all its processes), the database server and the whole machine."""

    app: float
    database: float
    machine: float


def snapshot(app_pids: list[int], database_pid: int | None) -> CpuSnapshot:
    """The CPU seconds used so far by `app_pids`, `database_pid` and the machine."""
    return CpuSnapshot(
        app=sum(cpu_seconds(pid) for pid in app_pids),
        database=cpu_seconds(database_pid) if database_pid is not None else 0.0,
        machine=machine_busy_seconds(),
    )
