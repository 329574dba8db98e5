"""LocalCluster's preparation (chunkraft.local.local_cluster) and the state ``chunkraft cluster``
keeps (chunkraft.cli.cluster.open_local_cluster); no controller process is started here."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from chunkraft.cli.cluster import STATE_FILE, open_local_cluster
from chunkraft.controller.config import load_controller_config
from chunkraft.controller.properties import parse_properties
from chunkraft.controller.storage import check_storage, read_meta_properties
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.records.uuids import parse_kafka_uuid


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_cluster_gets_distinct_ports_and_a_dir_per_node(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, size=3)
    nodes = list(cluster.nodes.values())
    assert [n.node_id for n in nodes] == [1, 2, 3]
    ports = [n.raft_port for n in nodes] + [n.http_port for n in nodes]
    assert len(set(ports)) == 6
    assert cluster.urls == [f"http://127.0.0.1:{n.http_port}" for n in nodes]
    assert len({n.data_dir for n in nodes}) == 3
    assert all(not n.running for n in nodes)
    parse_kafka_uuid(cluster.cluster_id)
    assert len(cluster.password) >= 24


def test_prepare_writes_private_properties_and_formats_every_data_dir(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "cluster", size=3,
                           extra_properties={"request.timeout.ms": "7000"})
    cluster.prepare()
    cluster_id = parse_kafka_uuid(cluster.cluster_id)
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.raft_port}" for n in cluster.nodes.values())
    for node in cluster.nodes.values():
        assert mode_of(node.config_path) == 0o600  # it holds the Raft password
        properties = {key: entry.value
                      for key, entry in parse_properties(node.config_path.read_text()).items()}
        assert properties["node.id"] == str(node.node_id)
        assert properties["cluster.id"] == cluster.cluster_id
        assert properties["controller.quorum.voters"] == voters
        assert properties["raft.password"] == cluster.password
        assert properties["listeners"] == (
            f"{node.url},SASL_PLAINTEXT://127.0.0.1:{node.kafka_port}")
        assert properties["request.timeout.ms"] == "7000"
        meta = read_meta_properties(node.data_dir)
        assert meta is not None and (meta.cluster_id, meta.node_id) == (cluster_id, node.node_id)
        check_storage(node.data_dir, cluster_id, node.node_id)
        # what the controller process will load: a valid configuration for this node
        config = load_controller_config(str(node.config_path), {}, {})
        assert (config.node_id, config.cluster_id) == (node.node_id, cluster_id)
        assert config.data_dir == node.data_dir and config.request_timeout_ms == 7000
        assert {u.node_id: u.url for u in config.controller_http_urls} == {
            n.node_id: n.url for n in cluster.nodes.values()}
        assert [str(entry) for entry in config.kafka_listeners] == [
            f"SASL_PLAINTEXT://127.0.0.1:{node.kafka_port}"]
    assert cluster.kafka_bootstrap_controllers == ",".join(
        f"127.0.0.1:{n.kafka_port}" for n in cluster.nodes.values())
    assert len({n.kafka_port for n in cluster.nodes.values()} | {
        b.kafka_port for b in cluster.broker_nodes.values()}) == 3 + cluster.broker_count
    client = parse_properties(cluster.kafka_client_properties_path.read_text())
    assert {key: entry.value for key, entry in client.items()} == {
        "security.protocol": "sasl_plaintext", "sasl.mechanisms": "PLAIN",
        "sasl.username": "admin", "sasl.password": cluster.admin_token}
    assert mode_of(cluster.kafka_client_properties_path) == 0o600  # the admin's token
    cluster.prepare()  # again: idempotent, the dirs stay formatted for the same cluster
    for node in cluster.nodes.values():
        check_storage(node.data_dir, cluster_id, node.node_id)


def test_open_local_cluster_keeps_ids_password_and_ports(tmp_path: Path) -> None:
    first = open_local_cluster(tmp_path, 3)
    state_path = tmp_path / STATE_FILE
    assert mode_of(state_path) == 0o600
    state = json.loads(state_path.read_text())
    assert state["cluster_id"] == first.cluster_id and state["password"] == first.password
    again = open_local_cluster(tmp_path, 5)  # the saved cluster wins over a new size
    assert again.cluster_id == first.cluster_id and again.password == first.password
    assert [(n.node_id, n.raft_port, n.http_port) for n in again.nodes.values()] == [
        (n.node_id, n.raft_port, n.http_port) for n in first.nodes.values()]
    other = open_local_cluster(tmp_path / "elsewhere", 1)
    assert other.cluster_id != first.cluster_id and len(other.nodes) == 1


class _Crash(Exception):
    pass


def test_files_holding_the_raft_password_are_private_from_their_first_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that dies right after writing the state file or a properties file (before any
    later chmod) must not leave the Raft password readable by other users."""

    def crash(*args: Any, **kwargs: Any) -> None:
        raise _Crash

    for module, name in ((Path, "chmod"), (os, "chmod"), (os, "fchmod")):
        monkeypatch.setattr(module, name, crash)
    umask = os.umask(0o022)  # the usual umask: a plain new file would be 0644
    try:
        with contextlib.suppress(_Crash):
            open_local_cluster(tmp_path / "state", 3)
        cluster = LocalCluster(tmp_path / "nodes", size=1)
        with contextlib.suppress(_Crash):
            cluster.prepare()
    finally:
        os.umask(umask)
    written = [tmp_path / "state" / STATE_FILE, cluster.nodes[1].config_path]
    for path in written:
        assert path.exists()
        assert mode_of(path) & 0o077 == 0, f"{path} is {mode_of(path):o}"


def test_prepare_makes_credentials_for_the_admin_and_the_brokers(tmp_path: Path) -> None:
    from chunkraft.security.credentials import CredentialStore

    cluster = LocalCluster(tmp_path / "cluster", size=1, brokers=3)
    cluster.prepare()
    assert mode_of(cluster.tokens_path) == 0o600
    assert mode_of(cluster.command_config_path) == 0o600
    assert cluster.command_config_path.read_text() == f"bearer.token={cluster.admin_token}\n"
    store = CredentialStore(cluster.credentials_path)
    assert store.principal_for(cluster.admin_token) == "User:admin"
    for broker in (1, 2, 3):
        assert store.principal_for(cluster.token(f"User:broker-{broker}")) == (
            f"User:broker-{broker}")
    assert cluster.admin_token not in cluster.credentials_path.read_text()
    with pytest.raises(KeyError, match="no token for User:broker-4"):
        cluster.token("User:broker-4")
    node = cluster.nodes[1]
    config = load_controller_config(str(node.config_path), {}, {})
    assert config.auth_credentials_file == cluster.credentials_path
    assert config.super_users == ("User:admin",)
    assert cluster.headers == {"authorization": f"Bearer {cluster.admin_token}"}

    alice = cluster.add_token("User:alice")
    assert cluster.token("User:alice") == alice
    store.refresh()
    assert store.principal_for(alice) == "User:alice"
    # The same directory again: the same tokens.
    again = LocalCluster(tmp_path / "cluster", size=1, cluster_id=cluster.cluster_id)
    again.prepare()
    assert again.admin_token == cluster.admin_token
    assert again.token("User:alice") == alice


def test_prepare_writes_each_brokers_config_and_token(tmp_path: Path) -> None:
    from chunkraft.broker_agent.config import load_broker_config
    from chunkraft.security.credentials import CredentialStore

    cluster = LocalCluster(tmp_path / "cluster", size=3)
    assert sorted(cluster.broker_nodes) == [0, 1, 2]
    ports = {b.http_port for b in cluster.broker_nodes.values()}
    assert len(ports) == 3 and not ports & {n.http_port for n in cluster.nodes.values()}
    cluster.prepare()
    store = CredentialStore(cluster.credentials_path)
    for broker_id, broker in cluster.broker_nodes.items():
        assert mode_of(broker.config_path) == 0o600 and mode_of(broker.token_path) == 0o600
        config = load_broker_config(str(broker.config_path), {}, {})
        assert config.node_id == broker_id and config.listeners.url == broker.url
        assert config.controller_quorum_bootstrap_servers == tuple(cluster.urls)
        assert config.log_dir == broker.log_dir
        assert store.principal_for(config.broker_token() or "") == f"User:broker-{broker_id}"
        assert config.super_users == ("User:admin",)
        assert cluster.broker_url(broker_id) == broker.url and not broker.running


def test_open_local_cluster_keeps_broker_ports(tmp_path: Path) -> None:
    first = open_local_cluster(tmp_path, 3, 2)
    state = json.loads((tmp_path / STATE_FILE).read_text())
    assert sorted(state["brokers"]) == ["0", "1"]
    again = open_local_cluster(tmp_path, 3, 3)  # the saved brokers win
    assert {b: n.http_port for b, n in again.broker_nodes.items()} == {
        b: n.http_port for b, n in first.broker_nodes.items()}


def test_per_node_properties_win_over_the_clusters(tmp_path: Path) -> None:
    from chunkraft.broker_agent.config import load_broker_config

    cluster = LocalCluster(tmp_path / "cluster", size=3, broker_count=2,
                           extra_properties={"request.timeout.ms": "7000"},
                           node_properties={2: {"request.timeout.ms": "9000"}},
                           broker_properties={"broker.rack": "everywhere"},
                           broker_node_properties={1: {"broker.rack": "rack-one"}})
    cluster.prepare()
    timeouts = {node_id: load_controller_config(str(node.config_path), {}, {}).request_timeout_ms
                for node_id, node in cluster.nodes.items()}
    assert timeouts == {1: 7000, 2: 9000, 3: 7000}
    racks = {broker_id: load_broker_config(str(broker.config_path), {}, {}).broker_rack
             for broker_id, broker in cluster.broker_nodes.items()}
    assert racks == {0: "everywhere", 1: "rack-one"}


def test_a_restarted_node_appends_to_its_own_log(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """start_broker / start after a kill or a stop: the earlier output stays, the new follows,
    each start marked. The node here is ``sh`` printing a line (the redirect is what counts)."""
    import subprocess

    real_popen = subprocess.Popen
    runs = iter(range(1, 100))

    def popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        role = args[3]  # [python, -m, chunkraft, broker|controller, --config, FILE]
        return real_popen(["sh", "-c", f"echo {role} run {next(runs)}; exec sleep 30"],
                          **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    cluster = LocalCluster(tmp_path / "cluster", size=1, broker_count=1)
    cluster.prepare()
    broker, node = cluster.broker_nodes[0], cluster.nodes[1]
    broker.log_path.write_text("output of a run before this one\n")

    def wait_for(path: Path, line: str) -> None:  # the child wrote before it is stopped
        deadline = time.monotonic() + 10
        while line not in path.read_text().splitlines() and time.monotonic() < deadline:
            time.sleep(0.02)

    try:
        cluster.start_broker(0)
        wait_for(broker.log_path, "broker run 1")
        cluster.kill_broker(0)
        cluster.start_broker(0)
        wait_for(broker.log_path, "broker run 2")
        cluster.stop_broker(0, timeout=10)
        cluster.start()
        wait_for(node.log_path, "controller run 3")
        cluster.kill(1)
        cluster.start(1)
        wait_for(node.log_path, "controller run 4")
    finally:
        cluster.stop_brokers(timeout=10)
        cluster.stop(timeout=10)
    text = broker.log_path.read_text()
    assert text.startswith("output of a run before this one\n")
    lines = text.splitlines()[1:]
    assert [line for line in lines if not line.startswith("===")] == [
        "broker run 1", "broker run 2"]
    headers = [line for line in lines if line.startswith("===")]
    assert len(headers) == 2 and all(
        line.endswith(" broker 0 started by chunkraft (LocalCluster) ===") for line in headers)
    node_lines = node.log_path.read_text().splitlines()
    assert [line for line in node_lines if not line.startswith("===")] == [
        "controller run 3", "controller run 4"]
    assert len(node_lines) == 4


def test_the_demos_name_the_web_console_of_the_first_controller(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, size=3)
    assert cluster.console_url == cluster.urls[0] + "/ui"
    hint = cluster.console_hint()
    assert hint.startswith(f"  web console: {cluster.urls[0]}/ui  ")
    assert str(cluster.command_config_path) in hint


def test_a_quorum_that_is_not_ready_in_time_says_what_each_node_answered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The node is ``sh`` that writes a line and serves nothing: the timeout names the node,
    why it did not answer and the end of its log (what CI keeps when the logs are gone)."""
    import subprocess

    real_popen = subprocess.Popen

    def popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        return real_popen(["sh", "-c", "echo raft: no leader yet; exec sleep 30"], **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    cluster = LocalCluster(tmp_path / "cluster", size=1, broker_count=0)
    cluster.prepare()
    try:
        cluster.start()
        deadline = time.monotonic() + 10
        while "no leader yet" not in cluster.nodes[1].log_path.read_text() \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        with pytest.raises(TimeoutError) as raised:
            cluster.wait_ready(timeout=0.5)
    finally:
        cluster.stop(timeout=10)
    message = str(raised.value)
    assert message.startswith(f"the quorum was not ready within 0.5 s; logs under "
                              f"{cluster.base_dir}\n"), message
    assert "\n  controller 1: no answer (ConnectError); log ends: === " in message, message
    assert message.endswith(" | raft: no leader yet"), message
