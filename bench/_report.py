"""Shared output for bench scripts: JSON lines on stdout, a dated section in bench/RESULTS.md."""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("RESULTS.md")


def emit(row: dict[str, Any]) -> None:
    """Prints one machine-readable result line."""
    print(json.dumps(row, sort_keys=True), flush=True)


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB.

    Reads VmHWM: unlike getrusage's ru_maxrss, it is not inherited from the parent across
    fork + exec, so a child process measures only itself.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> str:
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def command_line() -> str:
    """The command this bench script was run with, as RESULTS.md shows it."""
    return "python " + " ".join([f"bench/{Path(sys.argv[0]).name}", *sys.argv[1:]])


def append_section(title: str, lines: list[str]) -> None:
    """Appends a dated section (command, machine, then ``lines``) to RESULTS.md."""
    today = datetime.date.today().isoformat()
    text = [f"\n## {title} ({today})\n", f"Command: `{command_line()}`  ",
            f"Machine: {machine()}\n", *lines, ""]
    with RESULTS.open("a") as out:
        out.write("\n".join(text))
