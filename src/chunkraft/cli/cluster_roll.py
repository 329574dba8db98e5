"""``chunkraft cluster``'s rolling restart: the serving side and the operator's side.

Serving side (:class:`RollService`): while ``chunkraft cluster`` serves, its PID is in
``<dir>/cluster.pid`` (removed when it exits). SIGUSR1 asks it for a rolling restart
(:mod:`chunkraft.local.rolling_restart`); the handler only counts the request, and the watch
loop runs the roll in the main thread, between its looks for dead nodes (which therefore never
see the roll's own stops). Progress goes to stdout, one line per node, and the roll's record to
``<dir>/rolling-restart.json``, rewritten whole (write, then rename) after each step:
``{"roll": n, "pid", "started", "finished", "seconds", "ok", "error", "steps": [...]}``
(times in UTC ISO 8601; ``finished`` and ``ok`` null while it runs). A SIGUSR1 that comes
during a roll joins it (it is not queued for another one). SIGTERM during a roll stops the
command as always; the record then says the roll was interrupted.

Operator's side (:func:`follow_rolling_restart`, ``chunkraft cluster --rolling-restart``):
finds the serving process from ``cluster.pid`` (alive and a chunkraft cluster, so a stale file
or a reused PID is never signalled), sends SIGUSR1 (or, if a roll is running already, follows
that one), prints each step as the record shows it and exits 0 once the roll succeeded, 1 with
its error otherwise, or when ``--timeout`` passes first (the roll goes on in the cluster).
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkraft.cli.stop_signals import StopRequested
from chunkraft.local.roll_target import LocalClusterTarget
from chunkraft.local.rolling_restart import RollingRestartError, RollStep, rolling_restart

if TYPE_CHECKING:
    from chunkraft.local.local_cluster import LocalCluster

__all__ = [
    "PID_FILE",
    "ROLL_FILE",
    "RollService",
    "follow_rolling_restart",
    "serving_pid",
]

PID_FILE = "cluster.pid"
ROLL_FILE = "rolling-restart.json"
FOLLOW_INTERVAL = 0.5


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _write_json(path: Path, value: dict[str, Any]) -> None:
    """Whole or not at all: a reader never sees half a record."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def read_roll(directory: Path) -> dict[str, Any] | None:
    """The last roll's record under ``directory``, or None (none yet, or unreadable)."""
    try:
        value = json.loads((directory / ROLL_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and isinstance(value.get("roll"), int) else None


def _is_cluster_command(pid: int) -> bool:
    """Whether ``pid`` runs (not a zombie) ``chunkraft ... cluster``: a PID file left by a
    process that died, its PID since given to another program, names no cluster."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and b"cluster" in words \
        and any(b"chunkraft" in word for word in words)


def serving_pid(directory: Path) -> int | None:
    """The PID of the ``chunkraft cluster`` serving from ``directory``, or None."""
    try:
        pid = int((directory / PID_FILE).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and _is_cluster_command(pid) else None


class RollService:
    """The serving command's side (see the module docstring). Main thread only."""

    def __init__(self, cluster: LocalCluster, directory: Path,
                 guard: Callable[[], AbstractContextManager[None]],
                 out: Callable[[str], None] = lambda line: print(line, flush=True)) -> None:
        self.cluster = cluster
        self.directory = directory
        self.guard = guard
        self.out = out
        self._requested = 0
        self._handled = 0
        last = read_roll(directory)
        self._number = last["roll"] if last is not None else 0

    @contextmanager
    def serving(self) -> Iterator[None]:
        """SIGUSR1 handled and ``cluster.pid`` written for the block; both undone after."""
        previous = signal.signal(signal.SIGUSR1, self._request)
        pid_path = self.directory / PID_FILE
        pid_path.write_text(f"{os.getpid()}\n", encoding="ascii")
        try:
            yield
        finally:
            try:
                if pid_path.read_text(encoding="ascii").strip() == str(os.getpid()):
                    pid_path.unlink()
            except OSError:
                pass
            signal.signal(signal.SIGUSR1, previous)

    def _request(self, signum: int, frame: object) -> None:
        self._requested += 1

    def run_requested(self) -> bool:
        """Runs a roll if SIGUSR1 asked for one since the last; whether one ran."""
        if self._requested == self._handled:
            return False
        self._handled = self._requested
        self.roll()
        if self._requested != self._handled:
            self.out("chunkraft: SIGUSR1 during the rolling restart: it joined that one")
            self._handled = self._requested
        return True

    def roll(self) -> bool:
        """One rolling restart, its record kept in ``rolling-restart.json``; whether it
        succeeded. StopRequested (SIGTERM) is recorded, then raised again."""
        self._number += 1
        record: dict[str, Any] = {"roll": self._number, "pid": os.getpid(),
                                  "started": _now(), "finished": None, "seconds": None,
                                  "ok": None, "error": None, "steps": []}
        path = self.directory / ROLL_FILE
        _write_json(path, record)
        self.out(f"chunkraft: rolling restart {self._number}: every broker, then every "
                 "controller (followers first, the leader last), one at a time")
        started = time.monotonic()

        def progress(step: RollStep) -> None:
            record["steps"].append(step.as_json())
            _write_json(path, record)
            self.out(f"chunkraft: rolling restart: {step.line()}")

        def finish(error: str | None) -> None:
            record.update(finished=_now(), seconds=round(time.monotonic() - started, 3),
                          ok=error is None, error=error)
            _write_json(path, record)

        try:
            with LocalClusterTarget(self.cluster) as target:
                rolling_restart(target, progress=progress, guard=self.guard)
        except StopRequested as stop:
            finish(f"interrupted by {stop} before it finished; the command stopped")
            raise
        except (RollingRestartError, RuntimeError, OSError) as error:
            finish(str(error))
            self.out(f"chunkraft: rolling restart {self._number} failed after "
                     f"{record['seconds']:.1f} s: {error}")
            return False
        finish(None)
        self.out(f"chunkraft: rolling restart {self._number} done in "
                 f"{record['seconds']:.1f} s ({len(record['steps'])} nodes)")
        return True


def follow_rolling_restart(directory: Path, timeout: float,
                           out: Callable[[str], None] = print,
                           err: Callable[[str], None] = lambda line: print(
                               line, file=sys.stderr)) -> int:
    """``chunkraft cluster --dir DIR --rolling-restart``: 0 once the roll succeeded, else 1."""
    pid = serving_pid(directory)
    if pid is None:
        err(f"error: no chunkraft cluster is serving from {directory} (no live process in "
            f"{directory / PID_FILE}); start one with: chunkraft cluster --dir {directory}")
        return 1
    before = read_roll(directory)
    if before is not None and before.get("pid") == pid and before.get("finished") is None:
        wanted = before["roll"]
        out(f"a rolling restart is already running (started {before.get('started')}): "
            "following it")
    else:
        wanted = (before["roll"] if before is not None else 0) + 1
        os.kill(pid, signal.SIGUSR1)
        out(f"rolling restart requested from chunkraft cluster (pid {pid}); following "
            f"{directory / ROLL_FILE}")
    shown = 0
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / FOLLOW_INTERVAL) + 2):
        record = read_roll(directory)
        if record is not None and record["roll"] >= wanted:
            for step in record.get("steps", [])[shown:]:
                out(f"  {step.get('line')}")
                shown += 1
            if record.get("finished") is not None:
                if record.get("ok"):
                    out(f"rolling restart done in {record.get('seconds')} s")
                    return 0
                err(f"error: the rolling restart failed: {record.get('error')}")
                return 1
        if serving_pid(directory) != pid:
            err(f"error: the chunkraft cluster process (pid {pid}) exited before the rolling "
                "restart finished; see its output")
            return 1
        if time.monotonic() >= deadline:
            break
        time.sleep(FOLLOW_INTERVAL)
    err(f"error: the rolling restart did not finish within {timeout:g} s; it goes on in "
        f"chunkraft cluster (pid {pid}): follow {directory / ROLL_FILE}")
    return 1
