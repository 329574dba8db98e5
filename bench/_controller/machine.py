"""What the machine and the processes measured are doing: CPU, peak memory, load, commit.

Everything here reads /proc (Linux) or git; nothing signals or changes a process.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def with_descendants(pids: list[int]) -> list[int]:
    """The given processes and every live process below them (a controller's Raft process is
    its child: its CPU is the controller's, not "other" work of the machine)."""
    found: list[int] = []
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.append(pid)
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(child) for child in children)
    return found


def cpu_seconds(pids: list[int]) -> float:
    """user + system CPU seconds of the given processes and their live descendants (0 for one
    that is gone)."""
    total = 0.0
    for pid in with_descendants(pids):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
        except (OSError, IndexError, ValueError):
            pass
    return total


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores, from /proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICKS


def vm_hwm_mib(pid: int) -> float:
    """Peak resident set size of a process (VmHWM), in MiB; 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def other_load() -> str:
    """The load averages when the run starts."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def code_version() -> str:
    """The commit measured, and whether src/ had uncommitted changes (others edit it)."""
    here = Path(__file__).resolve().parents[2]  # the repository: "src" is relative to it
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, cwd=here).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "src"], capture_output=True,
                               text=True, timeout=10, cwd=here).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown commit"
    changed = len(dirty.splitlines())
    return f"commit {head}" + (f" with {changed} uncommitted file(s) in src/" if changed else "")
