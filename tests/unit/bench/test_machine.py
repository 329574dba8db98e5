"""The bench's CPU accounting counts a process's children: a controller's Raft process is its."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from _controller.machine import cpu_seconds, with_descendants

BUSY_CHILD = ("import time\nend = time.process_time() + 0.4\n"
              "while time.process_time() < end: pass\ntime.sleep(30)")


def test_a_child_and_its_cpu_count_with_its_parent() -> None:
    child = subprocess.Popen([sys.executable, "-c", BUSY_CHILD])
    try:
        deadline = time.monotonic() + 20
        while cpu_seconds([child.pid]) < 0.35 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.pid in with_descendants([os.getpid()])
        mine_alone = time.process_time()
        assert cpu_seconds([os.getpid()]) >= mine_alone * 0.9 + 0.35
    finally:
        child.kill()
        child.wait(timeout=10)


def test_a_process_that_is_gone_counts_nothing() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)
    assert cpu_seconds([gone.pid]) == 0.0
