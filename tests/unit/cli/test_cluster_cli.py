"""``chunkraft cluster`` (chunkraft.cli.cluster): a state file it cannot use, or an override
refused, is an error line, never a traceback, and nothing starts (hostile bytes:
tests/unit/cli/test_input_files.py); its signal handling; its report of dead nodes. The real
process: tests/integration/test_cluster_command.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from chunkraft.cli.cluster import (
    STATE_FILE,
    Restarter,
    open_local_cluster,
    report_dead,
)
from chunkraft.cli.errors import InputFileError
from chunkraft.cli.main import main
from chunkraft.local.local_cluster import LocalCluster


@pytest.mark.parametrize(("text", "problem"), [
    ("[]", "AttributeError"),
    ('{"nodes": {}}', "KeyError: 'cluster_id'"),
    ('{"nodes": 3, "cluster_id": "x", "password": "p"}', "TypeError"),
    ('{"nodes": {"a": [1, 2]}, "cluster_id": "x", "password": "p"}', ""),
])
def test_a_state_file_of_the_wrong_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         text: str, problem: str) -> None:
    state = tmp_path / STATE_FILE
    state.write_text(text)
    with pytest.raises(InputFileError, match=f"cluster state file {state} is not one chunkraft "
                                             "cluster wrote"):
        open_local_cluster(tmp_path, 3)
    assert main(["cluster", "--dir", str(tmp_path), "--exit"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cluster state file {state} is not one chunkraft cluster "
                          "wrote (") and problem in err
    assert err.count("\n") == 1 and state.read_text() == text  # not overwritten


def _no_node_started(directory: Path) -> bool:
    return not list(directory.glob("*/*.log"))


@pytest.mark.parametrize(("flags", "message"), [
    (["--broker-override", "log.rol.ms=5"],
     "error: --broker-override log.rol.ms=5: unknown setting 'log.rol.ms' (command line); "
     "did you mean log.roll.ms?"),
    (["--controller-override", "4:request.timeout.ms=5"],
     "error: --controller-override 4:request.timeout.ms=5: this cluster has no controller 4 "
     "(controller ids: 1, 2, 3)"),
    (["--broker-override", "node.id=7"],
     "error: --broker-override node.id=7: chunkraft cluster sets node.id itself"),
    # refused only by the whole file's checks, still before anything starts
    (["--controller-override", "2:raft.election.timeout.min.ms=900"],
     "error: raft.election.timeout.max.ms (default): 500 must be more than "
     "raft.election.timeout.min.ms (file {dir}/controller-2/controller.properties, line "),
    (["--broker-override", "0:replica.fetch.max.bytes=0"],
     "error: replica.fetch.max.bytes (file {dir}/broker-0/broker.properties, line "),
])
def test_a_refused_override_starts_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           flags: list[str], message: str) -> None:
    assert main(["cluster", "--dir", str(tmp_path), "--exit", *flags]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(message.replace("{dir}", str(tmp_path)))
    assert captured.err.count("\n") == 1
    assert "ready" not in captured.out and _no_node_started(tmp_path)


def test_an_override_of_the_wrong_shape_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["cluster", "--dir", str(tmp_path), "--broker-override", "x:log.roll.ms=1"])
    assert caught.value.code == 2
    assert "expected ID:KEY=VALUE with ID a node id" in capsys.readouterr().err


def test_report_dead_names_each_dead_node_once(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    cluster = LocalCluster(tmp_path, size=1, broker_count=2)
    quitter = subprocess.Popen(["sh", "-c", "exit 3"])
    quitter.wait(timeout=10)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        cluster.broker_nodes[1].process, cluster.nodes[1].process = quitter, sleeper
        dead = report_dead(cluster)
        assert [(d.kind, d.node_id) for d in dead] == [("broker", 1)]
        broker = cluster.broker_nodes[1]
        assert capsys.readouterr().err.splitlines() == [
            f"chunkraft: broker 1 (pid {quitter.pid}) died: exited with status 3; its log: "
            f"{broker.log_path}",
            f"chunkraft: broker 1 is not restarted; to restart it by hand, writing to the same "
            f"log: chunkraft broker --config {broker.config_path} >> {broker.log_path} 2>&1 &"]
        assert report_dead(cluster) == [] and capsys.readouterr().err == ""
    finally:
        sleeper.kill()
        sleeper.wait(timeout=10)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_restart_dead_restarts_unless_the_node_died_soon_after_its_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = LocalCluster(tmp_path, size=1, broker_count=1)
    started: list[str] = []

    def start_broker(broker_id: int) -> None:
        started.append(f"broker {broker_id}")
        cluster.broker_nodes[broker_id].process = subprocess.Popen(["sh", "-c", "exit 1"])

    def start(node_id: int | None = None) -> None:
        started.append(f"controller {node_id}")
        cluster.nodes[1].process = subprocess.Popen(["sh", "-c", "exit 2"])

    monkeypatch.setattr(cluster, "start_broker", start_broker)
    monkeypatch.setattr(cluster, "start", start)
    clock = _Clock()
    restarter = Restarter(cluster, min_uptime=10, clock=clock)
    clock.now += 30  # up 30 s, then dies: restarted
    first = subprocess.Popen(["sh", "-c", "exit 0"])
    first.wait(timeout=10)
    cluster.broker_nodes[0].process = first
    assert [d.node_id for d in report_dead(cluster, restarter)] == [0]
    replacement = cluster.broker_nodes[0].process
    assert started == ["broker 0"] and replacement is not None
    log = cluster.broker_nodes[0].log_path
    assert capsys.readouterr().err.splitlines()[1] == (
        f"chunkraft: broker 0 restarted (--restart-dead) as pid {replacement.pid}; its log: "
        f"{log}")
    replacement.wait(timeout=10)
    clock.now += 4  # the replacement dies 4 s after its start: left stopped
    assert [d.node_id for d in report_dead(cluster, restarter)] == [0]
    assert started == ["broker 0"] and cluster.broker_nodes[0].process is None
    assert capsys.readouterr().err.splitlines()[1].startswith(
        "chunkraft: broker 0 died 4.0 s after it started, sooner than 10 s: not restarted "
        "again (see its log; restart it by hand: chunkraft broker --config ")
    controller = subprocess.Popen(["sh", "-c", "exit 0"])
    controller.wait(timeout=10)
    cluster.nodes[1].process = controller  # up since the restarter began: 34 s
    assert [d.kind for d in report_dead(cluster, restarter)] == ["controller"]
    assert started == ["broker 0", "controller 1"]
    process = cluster.nodes[1].process
    assert process is not None
    process.wait(timeout=10)
