"""``chunkraft cluster``'s rolling-restart plumbing (chunkraft.cli.cluster_roll): the PID file
names only a live ``chunkraft cluster``, SIGUSR1 asks the serving side for a roll, and the
operator's side follows the record to its end. The "serving command" here is a small python
process whose command line reads ``chunkraft cluster``; only its own PID is signalled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chunkraft.cli import cluster_roll
from chunkraft.cli.cluster_roll import (
    PID_FILE,
    ROLL_FILE,
    RollService,
    follow_rolling_restart,
    serving_pid,
)

WAIT = 10.0


@pytest.fixture
def fake_serving(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process named like ``chunkraft cluster`` that notes each SIGUSR1 in a file."""
    script = ("import signal, sys, time\n"
              "signal.signal(signal.SIGUSR1, lambda *a: open(sys.argv[1], 'a').write('1'))\n"
              "print('up', flush=True)\n"
              "time.sleep(60)\n")
    process = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "signals"),
                                "chunkraft", "cluster"], stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"up\n"
    (tmp_path / PID_FILE).write_text(f"{process.pid}\n")
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)
        process.stdout.close()


def _write(directory: Path, record: dict[str, Any]) -> None:
    (directory / ROLL_FILE).write_text(json.dumps(record))


def _signals(directory: Path) -> int:
    path = directory / "signals"
    return len(path.read_text()) if path.exists() else 0


def test_serving_pid_names_only_a_live_chunkraft_cluster(
        tmp_path: Path, fake_serving: subprocess.Popen[bytes]) -> None:
    assert serving_pid(tmp_path) == fake_serving.pid
    (tmp_path / PID_FILE).write_text(f"{os.getpid()}\n")  # pytest: alive, not a cluster
    assert serving_pid(tmp_path) is None
    (tmp_path / PID_FILE).write_text("not a pid\n")
    assert serving_pid(tmp_path) is None
    (tmp_path / PID_FILE).unlink()
    assert serving_pid(tmp_path) is None


def test_follow_signals_the_serving_command_and_prints_the_steps_to_success(
        tmp_path: Path, fake_serving: subprocess.Popen[bytes]) -> None:
    _write(tmp_path, {"roll": 1, "pid": fake_serving.pid, "finished": "t", "ok": True,
                      "steps": [{"line": "old"}]})
    step = {"line": "broker 0 restarted in 1.0 s (...)"}

    def serve() -> None:  # what the serving side writes once it got the signal
        deadline = time.monotonic() + WAIT
        while _signals(tmp_path) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        _write(tmp_path, {"roll": 2, "pid": fake_serving.pid, "finished": None,
                          "steps": [step]})
        time.sleep(0.6)
        _write(tmp_path, {"roll": 2, "pid": fake_serving.pid, "finished": "t", "ok": True,
                          "seconds": 1.5, "steps": [step, {"line": "controller 1 ..."}]})

    out: list[str] = []
    thread = threading.Thread(target=serve)
    thread.start()
    status = follow_rolling_restart(tmp_path, WAIT, out=out.append, err=out.append)
    thread.join(WAIT)
    assert status == 0, out
    assert _signals(tmp_path) == 1
    assert out[1:] == ["  broker 0 restarted in 1.0 s (...)", "  controller 1 ...",
                       "rolling restart done in 1.5 s"]


def test_follow_joins_a_running_roll_and_fails_with_its_error(
        tmp_path: Path, fake_serving: subprocess.Popen[bytes]) -> None:
    _write(tmp_path, {"roll": 4, "pid": fake_serving.pid, "started": "s", "finished": None,
                      "steps": []})
    timer = threading.Timer(0.3, _write, (tmp_path, {
        "roll": 4, "pid": fake_serving.pid, "finished": "t", "ok": False, "steps": [],
        "error": "broker 1: registered and unfenced after its start not reached within 120 s"}))
    timer.start()
    out: list[str] = []
    status = follow_rolling_restart(tmp_path, WAIT, out=out.append, err=out.append)
    timer.join(WAIT)
    assert status == 1
    assert _signals(tmp_path) == 0  # joined, not asked again
    assert out == ["a rolling restart is already running (started s): following it",
                   "error: the rolling restart failed: broker 1: registered and unfenced "
                   "after its start not reached within 120 s"]


def test_follow_without_a_serving_cluster_says_so(tmp_path: Path) -> None:
    out: list[str] = []
    assert follow_rolling_restart(tmp_path, WAIT, out=out.append, err=out.append) == 1
    assert out == [f"error: no chunkraft cluster is serving from {tmp_path} (no live process "
                   f"in {tmp_path / PID_FILE}); start one with: chunkraft cluster --dir "
                   f"{tmp_path}"]


def test_follow_gives_up_after_its_timeout(
        tmp_path: Path, fake_serving: subprocess.Popen[bytes]) -> None:
    out: list[str] = []
    assert follow_rolling_restart(tmp_path, 0.6, out=out.append, err=out.append) == 1
    assert out[-1] == (f"error: the rolling restart did not finish within 0.6 s; it goes on in "
                       f"chunkraft cluster (pid {fake_serving.pid}): follow "
                       f"{tmp_path / ROLL_FILE}")


def test_the_service_writes_its_pid_runs_a_roll_per_sigusr1_and_cleans_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rolls: list[int] = []
    service = RollService(None, tmp_path, guard=lambda: None,  # type: ignore[arg-type]
                          out=lambda line: None)
    monkeypatch.setattr(service, "roll", lambda: rolls.append(1) or True)
    before = signal.getsignal(signal.SIGUSR1)
    with service.serving():
        assert (tmp_path / PID_FILE).read_text() == f"{os.getpid()}\n"
        assert service.run_requested() is False
        os.kill(os.getpid(), signal.SIGUSR1)
        assert service.run_requested() is True and rolls == [1]
        assert service.run_requested() is False
    assert not (tmp_path / PID_FILE).exists()
    assert signal.getsignal(signal.SIGUSR1) == before


def test_a_roll_is_numbered_after_the_last_record(tmp_path: Path) -> None:
    _write(tmp_path, {"roll": 7, "pid": 1, "finished": "t", "ok": True, "steps": []})
    assert cluster_roll.read_roll(tmp_path) is not None
    service = RollService(None, tmp_path, guard=lambda: None)  # type: ignore[arg-type]
    assert service._number == 7
