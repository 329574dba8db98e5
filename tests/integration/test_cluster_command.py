"""``chunkraft cluster`` as a real process on 127.0.0.1, as an operator runs it: a broker killed
with kill -9 is reported and reaped, SIGTERM stops every node, SIGINT stops it also when it
runs as a background job (SIGINT ignored, as a non-interactive shell starts one), and the
``--controller-override`` / ``--broker-override`` settings reach the nodes, and
``--restart-dead`` starts a killed broker again into its own log.

Only processes this test started are signalled: the command, by its PID, and a node it started
by the PID it printed (checked to be a chunkraft process first). Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from chunkraft.cli.cluster import RESTART_MIN_UPTIME

START_TIMEOUT = 40.0
STOP_TIMEOUT = 45.0
_NODE_LINE = re.compile(r"^  (controller|broker) (\d+): (\S+)  \(pid (\d+),", re.MULTILINE)


@dataclass
class ClusterCommand:
    """A running ``chunkraft cluster`` with its output files."""

    process: subprocess.Popen[bytes]
    directory: Path
    stdout: Path
    stderr: Path

    def out(self) -> str:
        return self.stdout.read_text(errors="replace")

    def err(self) -> str:
        return self.stderr.read_text(errors="replace")

    def wait_output(self, ready: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.process.poll() is not None:
                pytest.fail(f"chunkraft cluster exited ({self.process.returncode}) before "
                            f"{what}:\n{self.out()}\n{self.err()}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} within {timeout} s:\n{self.out()}\n{self.err()}")
            time.sleep(0.1)

    def wait_serving(self) -> None:
        self.wait_output(lambda: "serving;" in self.out(), "serving line", START_TIMEOUT)

    def nodes(self) -> dict[tuple[str, int], tuple[str, int]]:
        """(kind, id) -> (url, pid), from the startup lines."""
        return {(kind, int(node_id)): (url, int(pid))
                for kind, node_id, url, pid in _NODE_LINE.findall(self.out())}

    def wait_exit(self) -> int:
        try:
            return self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"chunkraft cluster did not stop within {STOP_TIMEOUT} s:\n"
                        f"{self.out()}\n{self.err()}")


def _is_chunkraft(pid: int) -> bool:
    """Whether ``pid`` is alive (not a zombie) and a chunkraft node: the PID was not reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and b"chunkraft" in command


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _ignores_sigint(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    ignored = re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.MULTILINE)
    assert ignored is not None
    return bool(int(ignored[1], 16) & (1 << (signal.SIGINT - 1)))


def _wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if _is_chunkraft(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in alive if _is_chunkraft(pid)]
    return alive


@pytest.fixture
def run_cluster(tmp_path: Path) -> Iterator[Callable[..., ClusterCommand]]:
    started: list[ClusterCommand] = []

    def run(*options: str, ignore_sigint: bool = False) -> ClusterCommand:
        directory = tmp_path / f"cluster-{len(started)}"
        directory.mkdir()
        stdout, stderr = tmp_path / f"out-{len(started)}", tmp_path / f"err-{len(started)}"

        def as_background_job() -> None:
            # what sh does to `cmd &` without job control, between fork and exec: the command
            # starts with SIGINT ignored, and Python then installs no handler of its own
            signal.signal(signal.SIGINT, signal.SIG_IGN)

        with stdout.open("wb") as out, stderr.open("wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "chunkraft", "cluster", "--dir", str(directory),
                 "--controllers", "1", *options],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
                preexec_fn=as_background_job if ignore_sigint else None)
        command = ClusterCommand(process, directory, stdout, stderr)
        started.append(command)
        return command

    yield run
    for command in started:  # a failed test: stop what it left, its nodes first
        if command.process.poll() is None:
            command.process.send_signal(signal.SIGTERM)
            try:
                command.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                command.process.kill()
                command.process.wait(timeout=10)
        for _, pid in command.nodes().values():
            if _is_chunkraft(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_killed_broker_is_reported_and_reaped_overrides_reach_the_nodes_sigterm_stops_all(
        run_cluster: Callable[..., ClusterCommand]) -> None:
    command = run_cluster("--brokers", "2",
                          "--controller-override", "request.max.body.bytes=2048",
                          "--broker-override", "broker.rack=rack-all",
                          "--broker-override", "1:broker.rack=rack-one")
    command.wait_serving()
    nodes = command.nodes()
    assert sorted(nodes) == [("broker", 0), ("broker", 1), ("controller", 1)]
    directory = command.directory
    token = (directory / "admin.properties").read_text().split("bearer.token=", 1)[1].strip()
    cluster_id = json.loads((directory / "cluster.json").read_text())["cluster_id"]
    headers = {"authorization": f"Bearer {token}"}

    # the overrides reached the processes: the controller refuses a 4 KiB body (1 MiB by
    # default), and each broker registered with its rack
    controller_url = nodes[("controller", 1)][0]
    answer = httpx.post(f"{controller_url}/v3/clusters/{cluster_id}/topics", headers=headers,
                        content=json.dumps({"topic_name": "t" * 4096}),
                        timeout=10)
    assert answer.status_code == 413, answer.text
    brokers = httpx.get(f"{controller_url}/v3/clusters/{cluster_id}/brokers", headers=headers,
                        timeout=10).json()["data"]
    assert {b["broker_id"]: b["rack"] for b in brokers} == {0: "rack-all", 1: "rack-one"}

    # Kafka's side, as printed: cluster.json's bootstrap lists, and the kcat command line the
    # cluster prints works as it is (kcat, a stock client, with kafka-client.properties)
    state = json.loads((directory / "cluster.json").read_text())
    servers, controllers = state["kafka_bootstrap_servers"], state["kafka_bootstrap_controllers"]
    assert len(servers.split(",")) == 2 and len(controllers.split(",")) == 1
    assert f"Kafka bootstrap servers (SASL_PLAINTEXT): {servers}" in command.out()
    assert f"Kafka bootstrap controllers (SASL_PLAINTEXT): {controllers}" in command.out()
    (printed,) = [line.split("try: ", 1)[1] for line in command.out().splitlines()
                  if "try: kcat" in line]
    listing = subprocess.run([*printed.split(), "-m", "10"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    assert " 2 brokers:" in listing, listing
    for port in (address.rsplit(":", 1)[1] for address in servers.split(",")):
        assert f"127.0.0.1:{port}" in listing, listing

    # kill -9 broker 0: reported on stderr, with its pid, the signal and its log; reaped
    pid = nodes[("broker", 0)][1]
    assert _is_chunkraft(pid)
    os.kill(pid, signal.SIGKILL)
    log = directory / "broker-0" / "broker.log"
    report = (f"chunkraft: broker 0 (pid {pid}) died: killed by signal 9 (SIGKILL); "
              f"its log: {log}")
    command.wait_output(lambda: report in command.err(), "report of the dead broker", 10)
    assert "chunkraft: broker 0 is not restarted" in command.err()
    assert _state(pid) is None, "broker 0 stays a zombie"  # reaped, not only dead

    # SIGTERM: every node stops (brokers first), then the command exits 0
    command.process.send_signal(signal.SIGTERM)
    assert command.wait_exit() == 0, command.err()
    out = command.out()
    assert out.index("stopping the brokers") < out.index("stopping the controllers")
    assert _wait_gone([pid for _, pid in nodes.values()]) == []


def test_sigint_stops_a_background_job(run_cluster: Callable[..., ClusterCommand]) -> None:
    command = run_cluster("--brokers", "0", ignore_sigint=True)
    command.wait_serving()
    assert not _ignores_sigint(command.process.pid), "the SIGINT handler was not installed"
    pids = [pid for _, pid in command.nodes().values()]
    assert len(pids) == 1 and _is_chunkraft(pids[0])
    # it names the web console, which answers there
    ((url, _),) = command.nodes().values()
    assert f"  web console: {url}/ui  " in command.out()
    assert httpx.get(f"{url}/ui/login", timeout=10).status_code == 200
    command.process.send_signal(signal.SIGINT)
    assert command.wait_exit() == 0, command.err()
    assert "stopping the controllers" in command.out()
    assert _wait_gone(pids) == []


def test_an_unknown_override_starts_nothing(run_cluster: Callable[..., ClusterCommand]
                                            ) -> None:
    command = run_cluster("--broker-override", "log.rol.ms=5")
    assert command.wait_exit() == 1
    assert command.err() == ("error: --broker-override log.rol.ms=5: unknown setting "
                             "'log.rol.ms' (command line); did you mean log.roll.ms?\n")
    assert not list(command.directory.glob("*/*.log"))


def test_restart_dead_restarts_a_killed_broker_into_its_own_log(
        run_cluster: Callable[..., ClusterCommand]) -> None:
    command = run_cluster("--brokers", "1", "--restart-dead")
    command.wait_serving()
    serving = time.monotonic()
    nodes = command.nodes()
    pid = nodes[("broker", 0)][1]
    log = command.directory / "broker-0" / "broker.log"
    # a node that dies within RESTART_MIN_UPTIME of its start is not restarted: outlive it
    time.sleep(max(0.0, serving + RESTART_MIN_UPTIME + 0.5 - time.monotonic()))
    os.kill(pid, signal.SIGKILL)
    restarted = re.compile(r"chunkraft: broker 0 restarted \(--restart-dead\) as pid (\d+); "
                           f"its log: {re.escape(str(log))}")
    command.wait_output(lambda: restarted.search(command.err()) is not None, "restart line", 10)
    assert f"chunkraft: broker 0 (pid {pid}) died: killed by signal 9 (SIGKILL)" in command.err()
    match = restarted.search(command.err())
    assert match is not None
    new_pid = int(match[1])
    assert new_pid != pid and _is_chunkraft(new_pid) and _state(pid) is None
    # the same log, appended to: both starts' marks, the first run's output kept before them
    text = log.read_text(errors="replace")
    marks = [line for line in text.splitlines()
             if line.startswith("===") and "broker 0 started by chunkraft" in line]
    assert len(marks) == 2
    assert text.index("broker 0 registered") < text.rindex(marks[1])  # the first run's output
    # SIGTERM stops the restarted broker too: it is the command's own child
    command.process.send_signal(signal.SIGTERM)
    assert command.wait_exit() == 0, command.err()
    assert _wait_gone([new_pid, *(p for _, p in nodes.values())]) == []


ROLL_TIMEOUT = 240.0


def _roll_command(directory: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chunkraft", "cluster", "--dir", str(directory),
         "--rolling-restart", *options],
        capture_output=True, text=True, timeout=ROLL_TIMEOUT + 30, stdin=subprocess.DEVNULL)


def test_rolling_restart_without_a_serving_cluster_says_so(tmp_path: Path) -> None:
    (tmp_path / "cluster.pid").write_text("999999999\n")  # a stale file names no process
    done = _roll_command(tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: no chunkraft cluster is serving from {tmp_path} ")
    assert done.stdout == ""


def test_rolling_restart_restarts_every_node_brokers_then_followers_then_the_leader(
        run_cluster: Callable[..., ClusterCommand]) -> None:
    command = run_cluster("--controllers", "3", "--brokers", "3")
    command.wait_serving()
    directory = command.directory
    assert (directory / "cluster.pid").read_text().strip() == str(command.process.pid)
    before = command.nodes()
    token = (directory / "admin.properties").read_text().split("bearer.token=", 1)[1].strip()
    cluster_id = json.loads((directory / "cluster.json").read_text())["cluster_id"]
    answer = httpx.post(f"{before[('controller', 1)][0]}/v3/clusters/{cluster_id}/topics",
                        headers={"authorization": f"Bearer {token}"}, timeout=30,
                        json={"topic_name": "rolled", "partitions_count": 3,
                              "replication_factor": 3})
    assert answer.status_code in (200, 201), answer.text

    done = _roll_command(directory, "--timeout", str(ROLL_TIMEOUT))
    assert done.returncode == 0, (done.stdout, done.stderr, command.out(), command.err())
    lines = [line.strip() for line in done.stdout.splitlines() if line.startswith("  ")]
    nodes = [line.split(" restarted in ")[0] for line in lines]
    assert nodes[:3] == ["broker 0", "broker 1", "broker 2"], done.stdout
    assert len(nodes) == 6, done.stdout
    controllers = [n.split(" (")[0] for n in nodes[3:]]
    assert sorted(controllers) == ["controller 1", "controller 2", "controller 3"]
    # followers first, the leader last: a follower's step names the leader, never itself; the
    # last one is the leader, unless the leadership moved meanwhile to a controller already
    # restarted (pysyncobj has no pre-vote: a restarted follower can win an election)
    for name, line in zip(controllers[:2], lines[3:5], strict=True):
        assert "(the leader)" not in line and f"the leader: {name};" not in line, line
    assert nodes[5].endswith("(the leader)") or any(
        f"the leader: {name};" in lines[5] for name in controllers[:2]), done.stdout
    assert all("back in every ISR" in line for line in lines[:3])
    assert all("caught up to offset" in line for line in lines[3:])
    assert done.stdout.rstrip().splitlines()[-1].startswith("rolling restart done in ")
    record = json.loads((directory / "rolling-restart.json").read_text())
    assert (record["roll"], record["ok"], record["error"], len(record["steps"])) == (
        1, True, None, 6)
    # the serving command printed the steps too, and took none of the roll's stops for a death
    assert "chunkraft: rolling restart 1 done in " in command.out()
    assert "died" not in command.err(), command.err()
    # every node runs in a new process: the old PIDs are gone
    assert _wait_gone([pid for _, pid in before.values()]) == []

    command.process.send_signal(signal.SIGTERM)
    assert command.wait_exit() == 0, command.err()
    assert not (directory / "cluster.pid").exists()
