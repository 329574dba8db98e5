"""The per-host properties files (chunkraft.deploy.host_config), read back by the real loaders:
every value lands where the controller and the broker look for it, and no address in them is a
wildcard or a loopback one."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.broker_agent.config import load_broker_config
from chunkraft.controller.addresses import ControllerUrl, Listener, Voter
from chunkraft.controller.config import load_controller_config
from chunkraft.controller.properties import parse_properties
from chunkraft.controller.storage import random_cluster_id
from chunkraft.deploy.host_config import (
    BrokerPaths,
    ClusterHosts,
    ControllerHost,
    ControllerPaths,
    check_host_address,
    render_broker_properties,
    render_command_config,
    render_controller_properties,
)
from chunkraft.records.uuids import parse_kafka_uuid

ADDRESSES = ("198.18.7.1", "198.18.7.2", "198.18.7.3")


def cluster(addresses: tuple[str, ...] = ADDRESSES) -> ClusterHosts:
    return ClusterHosts(random_cluster_id(), tuple(
        ControllerHost(index + 1, address) for index, address in enumerate(addresses)))


def controller_paths(base: Path, node_id: int) -> ControllerPaths:
    password = base / "raft-password"
    password.write_text("s3cret-password\n")
    return ControllerPaths(base / f"controller-{node_id}", password, base / "credentials.json")


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_each_controller_file_loads_with_its_own_address_and_every_voter(tmp_path: Path
                                                                         ) -> None:
    hosts = cluster()
    for node_id, address in enumerate(ADDRESSES, start=1):
        paths = controller_paths(tmp_path, node_id)
        text = render_controller_properties(hosts, node_id, paths=paths,
                                            extra={"broker.session.timeout.ms": "12000"})
        config = load_controller_config(
            write(tmp_path / f"controller-{node_id}.properties", text), {}, {})
        assert config.node_id == node_id
        assert config.cluster_id == parse_kafka_uuid(hosts.cluster_id)
        assert config.controller_quorum_voters == (
            Voter(1, ADDRESSES[0], 9093), Voter(2, ADDRESSES[1], 9093),
            Voter(3, ADDRESSES[2], 9093))
        assert config.raft_address == f"{address}:9093"
        assert config.listeners == Listener("http", address, 9090)
        assert config.advertised_listeners == config.listeners
        assert config.controller_http_urls == tuple(
            ControllerUrl(n, f"http://{a}:9090") for n, a in enumerate(ADDRESSES, start=1))
        assert config.data_dir == tmp_path / f"controller-{node_id}"
        assert config.raft_password == "s3cret-password"
        assert config.auth_credentials_file == tmp_path / "credentials.json"
        assert config.super_users == ("User:admin",)
        assert config.broker_session_timeout_ms == 12000
        # The secret is named, never written; the voters line is the same on every node.
        assert "s3cret" not in text
        assert parse_properties(text)["controller.quorum.voters"].value == hosts.voters


def test_a_broker_file_loads_with_its_host_listener_and_the_controllers(tmp_path: Path
                                                                        ) -> None:
    hosts = cluster()
    paths = BrokerPaths(tmp_path / "logs", tmp_path / "broker.token",
                        tmp_path / "credentials.json")
    text = render_broker_properties(hosts, 2, "198.18.7.6", paths=paths, rack="r2",
                                    extra={"min.insync.replicas": "2"})
    config = load_broker_config(write(tmp_path / "broker.properties", text), {}, {})
    assert config.node_id == 2
    assert config.cluster_id == parse_kafka_uuid(hosts.cluster_id)
    assert config.broker_rack == "r2"
    assert config.controller_quorum_bootstrap_servers == tuple(
        f"http://{a}:9090" for a in ADDRESSES)
    assert config.listeners == Listener("http", "198.18.7.6", 9092)
    assert config.advertised == config.listeners
    assert config.log_dirs == (tmp_path / "logs",)
    assert config.broker_token_file == tmp_path / "broker.token"
    assert config.auth_credentials_file == tmp_path / "credentials.json"
    assert config.super_users == ("User:admin",)
    assert config.min_insync_replicas == 2


def test_the_default_paths_are_those_of_the_systemd_layout() -> None:
    hosts = cluster()
    controller = parse_properties(render_controller_properties(hosts, 1))
    assert controller["data.dir"].value == "/var/lib/chunkraft/controller"
    assert controller["raft.password.file"].value == "/etc/chunkraft/raft-password"
    assert controller["auth.credentials.file"].value == \
        "/etc/chunkraft/credentials/credentials.json"
    broker = parse_properties(render_broker_properties(hosts, 0, "198.18.7.4"))
    assert broker["log.dirs"].value == "/var/lib/chunkraft/broker"
    assert broker["broker.token.file"].value == "/etc/chunkraft/credentials/broker.token"
    assert render_command_config(Path("/etc/chunkraft/admin.token")).endswith(
        "bearer.token.file=/etc/chunkraft/admin.token\n")


def test_ipv6_host_addresses_are_bracketed_where_the_settings_need_it(tmp_path: Path) -> None:
    hosts = cluster(("2001:db8::1", "2001:db8::2", "2001:db8::3"))
    paths = controller_paths(tmp_path, 1)
    config = load_controller_config(
        write(tmp_path / "c.properties", render_controller_properties(hosts, 1, paths=paths)),
        {}, {})
    assert config.raft_address == "2001:db8::1:9093"
    assert config.listeners == Listener("http", "2001:db8::1", 9090)


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "127.0.0.1", "127.0.1.1", "::1",
                                     "localhost", "LOCALHOST", "db.localhost"])
def test_wildcard_and_loopback_addresses_are_refused_everywhere(address: str) -> None:
    with pytest.raises(ValueError, match=r"wildcard|loopback"):
        check_host_address(address)
    with pytest.raises(ValueError, match=r"controller 2's address .*(wildcard|loopback)"):
        cluster((ADDRESSES[0], address, ADDRESSES[2]))
    with pytest.raises(ValueError, match=r"broker address .*(wildcard|loopback)"):
        render_broker_properties(cluster(), 0, address)


@pytest.mark.parametrize("address", ["", " 198.18.7.1", "a,b", "1@2", "[::1]", "a b"])
def test_what_is_no_address_is_refused(address: str) -> None:
    with pytest.raises(ValueError, match="is not a host name or IP address"):
        check_host_address(address)


def test_a_host_name_is_an_address_too() -> None:
    assert check_host_address("controller-1.prod.example") == "controller-1.prod.example"


def test_the_layout_refuses_what_the_loader_would(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="addresses repeat"):
        cluster((ADDRESSES[0], ADDRESSES[0], ADDRESSES[2]))
    with pytest.raises(ValueError, match="node ids repeat"):
        ClusterHosts(random_cluster_id(), (ControllerHost(1, ADDRESSES[0]),
                                           ControllerHost(1, ADDRESSES[1])))
    with pytest.raises(ValueError, match="at least one controller"):
        ClusterHosts(random_cluster_id(), ())
    with pytest.raises(ValueError):
        ClusterHosts("not a cluster id", (ControllerHost(1, ADDRESSES[0]),))
    with pytest.raises(ValueError, match="both 9090"):
        ClusterHosts(random_cluster_id(), (ControllerHost(1, ADDRESSES[0]),), raft_port=9090)
    with pytest.raises(KeyError):
        render_controller_properties(cluster(), 4)


def test_extra_settings_must_be_real_and_not_the_layouts_own() -> None:
    with pytest.raises(ValueError, match="not a controller setting"):
        render_controller_properties(cluster(), 1, extra={"raft.election.timeout": "300"})
    with pytest.raises(ValueError, match="written by the renderer"):
        render_controller_properties(cluster(), 1, extra={"listeners": "http://0.0.0.0:1"})
    with pytest.raises(ValueError, match="written by the renderer"):
        render_controller_properties(cluster(), 1, extra={"raft.password": "inline"})
    with pytest.raises(ValueError, match="not a broker setting"):
        render_broker_properties(cluster(), 0, "198.18.7.4", extra={"num.partitions": "3"})
    with pytest.raises(ValueError, match="written by the renderer"):
        render_broker_properties(cluster(), 0, "198.18.7.4",
                                 extra={"advertised.listeners": "http://127.0.0.1:9092"})
    with pytest.raises(ValueError, match="one properties line"):
        render_controller_properties(cluster(), 1, extra={"request.timeout.ms": "1\nnode.id=9"})


def test_relative_paths_are_refused() -> None:
    with pytest.raises(ValueError, match="relative"):
        render_controller_properties(cluster(), 1, paths=ControllerPaths(Path("data")))
    with pytest.raises(ValueError, match="relative"):
        render_broker_properties(cluster(), 0, "198.18.7.4",
                                 paths=BrokerPaths(token_file=Path("token")))
    with pytest.raises(ValueError, match="relative"):
        render_command_config(Path("admin.token"))


def test_the_examples_in_operations_md_are_what_the_renderer_writes() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
    hosts = ClusterHosts("MkU3OEVBNTcwNTJENDM2Qg", (
        ControllerHost(1, "10.0.0.1"), ControllerHost(2, "10.0.0.2"),
        ControllerHost(3, "10.0.0.3")))
    assert f"```properties\n{render_controller_properties(hosts, 1)}```" in docs
    assert f"```properties\n{render_broker_properties(hosts, 0, '10.0.1.1')}```" in docs


def test_the_systemd_examples_use_the_files_the_renderer_names() -> None:
    """deploy/systemd's example properties and the renderer describe one host layout: the same
    data, password, token and credentials files (the addresses differ: they are examples)."""
    systemd = Path(__file__).resolve().parents[3] / "deploy" / "systemd"
    hosts = cluster()
    pairs = (
        (systemd / "controller.properties.example", render_controller_properties(hosts, 1),
         ("data.dir", "raft.password.file", "auth.credentials.file")),
        (systemd / "broker.properties.example", render_broker_properties(hosts, 0, "198.18.7.4"),
         ("log.dirs", "broker.token.file", "auth.credentials.file")),
    )
    for example, rendered, keys in pairs:
        shipped = parse_properties(example.read_text())
        ours = parse_properties(rendered)
        for key in keys:
            assert shipped[key].value == ours[key].value, (example.name, key)
