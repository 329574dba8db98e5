"""``chunkraft quorum describe`` (chunkraft.cli.quorum): the two formats, and the command against
real controller apps served by uvicorn on 127.0.0.1 (and against nothing at all)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from chunkraft.api.app import create_app
from chunkraft.api.context import ControllerContext
from chunkraft.cli.main import main
from chunkraft.cli.quorum import fetch_quorum, format_replication, format_status
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.raft.local import LocalRaft
from tests.unit.api.support import CLUSTER_ID, CLUSTER_ID_TEXT, FollowerRaft

STATUS: dict[str, Any] = {
    "node_id": 1,
    "state": "leader",
    "leader_id": 1,
    "epoch": 7,
    "has_quorum": True,
    "commit_index": 120,
    "last_applied_index": 120,
    "high_watermark": 4242,
    "cluster_id": "MkU3OEVBNTcwNTJENDM2Qg",
    "voters": [
        {"node_id": 1, "address": "127.0.0.1:9093", "log_end_index": 120, "lag": 0,
         "last_contact_ms_ago": 0, "connected": True},
        {"node_id": 2, "address": "127.0.0.1:9094", "log_end_index": 117, "lag": 3,
         "last_contact_ms_ago": 40, "connected": True},
        {"node_id": 3, "address": "127.0.0.1:9095", "log_end_index": None, "lag": None,
         "last_contact_ms_ago": None, "connected": False},
    ],
    "failure": None,
}


def test_format_status_reads_like_kafka_metadata_quorum() -> None:
    assert format_status(STATUS).splitlines() == [
        "ClusterId:            MkU3OEVBNTcwNTJENDM2Qg",
        "LeaderId:             1",
        "LeaderEpoch:          7",
        "HighWatermark:        4242",
        "MaxFollowerLag:       3",
        "MaxFollowerLagTimeMs: 40",
        "CurrentVoters:        [1,2,3]",
        "CurrentObservers:     []",
    ]


def test_format_status_adds_readiness_and_the_raft_tick_lag_after_kafkas_lines() -> None:
    ready = {**STATUS, "ready": True, "not_ready_reason": None, "tick_lag_seconds": 0.0123}
    assert format_status(ready).splitlines()[-2:] == [
        "Ready:                true",
        "RaftTickLagMs:        12",
    ]
    stalled = {**ready, "ready": False, "tick_lag_seconds": 3.5,
               "not_ready_reason": "the Raft thread has not ticked for 3.5 s"}
    assert format_status(stalled).splitlines()[-2:] == [
        "Ready:                false (the Raft thread has not ticked for 3.5 s)",
        "RaftTickLagMs:        3500",
    ]


def test_format_status_ends_with_how_steady_the_leader_has_been() -> None:
    steady = {**STATUS, "tick_lag_seconds": 0.0123, "leader_for_seconds": 61.2345,
              "leadership_changes": 1, "term_increments": 1}
    assert format_status(steady).splitlines()[-4:] == [
        "RaftTickLagMs:        12",
        "LeaderForMs:          61234",
        "LeadershipChanges:    1",
        "TermIncrements:       1",
    ]
    leaderless = {**steady, "leader_for_seconds": None}
    assert not any(line.startswith("LeaderForMs") for line in
                   format_status(leaderless).splitlines())


def test_format_status_without_follower_progress_says_unknown() -> None:
    alone = {**STATUS, "voters": [STATUS["voters"][0], STATUS["voters"][2]]}
    lines = format_status(alone).splitlines()
    assert "MaxFollowerLag:       unknown" in lines
    assert "MaxFollowerLagTimeMs: unknown" in lines


def test_format_replication_has_one_aligned_line_per_voter() -> None:
    assert format_replication(STATUS).splitlines() == [
        "NodeId  LogEndIndex  Lag      LastContactMsAgo  Status",
        "1       120          0        0                 Leader",
        "2       117          3        40                Follower",
        "3       unknown      unknown  unknown           Follower (disconnected)",
    ]


def test_describe_with_nothing_answering_exits_1_with_a_clear_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        status = main(["quorum", "describe", "--status", "--bootstrap-server", url])
    captured = capsys.readouterr()
    assert status == 1
    assert captured.out == ""
    assert captured.err == ("Error while executing quorum command : NETWORK_EXCEPTION: no "
                            f"controller answered: {url}: connection refused\n")
    assert captured.err.count("\n") == 1


# ------------------------------------------------------------------ against served apps


@contextlib.contextmanager
def serving(raft: LocalRaft, controller_urls: dict[int, str] | None = None,
            sock: socket.socket | None = None) -> Iterator[str]:
    """A controller app on a real 127.0.0.1 socket, served by uvicorn in a thread."""
    sock = sock or _listening_socket()
    context = ControllerContext(controller=QuorumController(raft), cluster_id=CLUSTER_ID,
                                node_id=raft.node_id, controller_urls=controller_urls or {},
                                heartbeats=BrokerHeartbeatTracker())
    server = uvicorn.Server(uvicorn.Config(create_app(context, monitor_sessions=False),
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])),
                              daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _listening_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def test_describe_against_a_served_leader(capsys: pytest.CaptureFixture[str]) -> None:
    with serving(LocalRaft(1)) as url:
        assert main(["quorum", "describe", "--status", "--bootstrap-server", url]) == 0
        status_out = capsys.readouterr().out
        assert main(["quorum", "describe", "--replication", "--bootstrap-server", url]) == 0
        replication_out = capsys.readouterr().out
        assert main(["quorum", "describe", "--json", "--bootstrap-server", url]) == 0
        raw = json.loads(capsys.readouterr().out)
    assert f"ClusterId:            {CLUSTER_ID_TEXT}\n" in status_out
    assert "LeaderId:             1\n" in status_out
    assert "CurrentVoters:        [1]\n" in status_out
    assert replication_out.splitlines()[1].split()[0] == "1"
    assert replication_out.splitlines()[1].endswith("Leader")
    assert raw["state"] == "leader" and raw["cluster_id"] == CLUSTER_ID_TEXT


def test_describe_asks_the_leader_when_the_first_answer_comes_from_a_follower() -> None:
    leader_socket = _listening_socket()
    leader_url = f"http://127.0.0.1:{leader_socket.getsockname()[1]}"
    with serving(LocalRaft(1), sock=leader_socket), \
            serving(FollowerRaft(2, leader=1), {1: leader_url}) as follower_url:
        nothing = f"http://127.0.0.1:{_closed_port()}"
        status = fetch_quorum(f"{nothing}, {follower_url}/")
    assert status["node_id"] == 1 and status["state"] == "leader"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_output_json_and_a_command_config(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("bearer.token=crt_anything\n")
    with serving(LocalRaft(1)) as url:
        assert main(["quorum", "describe", "--output", "json", "--command-config", str(config),
                     "--bootstrap-server", url]) == 0
    assert json.loads(capsys.readouterr().out)["leader_id"] == 1


def test_a_missing_command_config_is_a_quorum_command_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.properties"
    status = main(["quorum", "describe", "--status", "--command-config", str(missing),
                   "--bootstrap-server", "http://127.0.0.1:1"])
    assert status == 1
    assert capsys.readouterr().err == (
        f"Error while executing quorum command : command config file {missing} does not "
        "exist\n")
