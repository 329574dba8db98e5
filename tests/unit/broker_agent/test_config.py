"""BrokerConfig: the layers (file < environment < overrides), parsing and consistency checks,
and docs/broker.md listing every setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.broker_agent.config import BrokerConfig, load_broker_config
from chunkraft.broker_agent.settings import SETTINGS, broker_env_var
from chunkraft.errors import ConfigError

DOCS = Path(__file__).resolve().parents[3] / "docs" / "broker.md"
REQUIRED = {
    "node.id": "0",
    "controller.quorum.bootstrap.servers": "http://127.0.0.1:9090, http://127.0.0.1:9091",
    "listeners": "http://127.0.0.1:9192",
    "log.dirs": "/tmp/b0",
}


def write(tmp_path: Path, values: dict[str, str]) -> str:
    path = tmp_path / "broker.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return str(path)


def test_a_minimal_file_gives_kafkas_defaults(tmp_path: Path) -> None:
    config = load_broker_config(write(tmp_path, REQUIRED), {}, {})
    assert config.node_id == 0
    assert config.controller_quorum_bootstrap_servers == (
        "http://127.0.0.1:9090", "http://127.0.0.1:9091")
    assert config.listeners.url == "http://127.0.0.1:9192"
    assert config.listener_name == "HTTP" and config.advertised == config.listeners
    assert config.log_dir == Path("/tmp/b0")
    assert config.broker_heartbeat_interval_ms == 1000
    assert config.replica_lag_time_max_ms == 30_000
    assert config.replica_fetch_wait_max_ms == 500
    assert config.replica_fetch_max_bytes == 1024 * 1024
    assert config.chunk_copy_throttle_bytes_per_second == -1
    assert config.log_retention_check_interval_ms == 300_000
    assert config.controlled_shutdown_timeout_ms == 30_000
    assert config.cluster_id is None and config.broker_token() is None
    assert config.principal == "User:broker-0"


def test_environment_beats_the_file_and_overrides_beat_both(tmp_path: Path) -> None:
    path = write(tmp_path, {**REQUIRED, "broker.rack": "file"})
    config = load_broker_config(path, {"node.id": "7"}, {
        broker_env_var("broker.rack"): "env", broker_env_var("node.id"): "3",
        "CHUNKRAFT_NODE_ID": "9"})  # a controller's variable: not the broker's
    assert config.broker_rack == "env" and config.node_id == 7


def test_errors_name_the_setting_and_its_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"log.dirs: required"):
        load_broker_config(write(tmp_path, {k: v for k, v in REQUIRED.items()
                                            if k != "log.dirs"}), {}, {})
    with pytest.raises(ConfigError, match=r"unknown setting 'broker.heartbeat.ms'.*did you mean"):
        load_broker_config(write(tmp_path, {**REQUIRED, "broker.heartbeat.ms": "5"}), {}, {})
    with pytest.raises(ConfigError, match=r"node.id \(command line\)"):
        load_broker_config(write(tmp_path, REQUIRED), {"node.id": "x"}, {})
    with pytest.raises(ConfigError, match=r"broker.heartbeat.interval.ms .*at least 10"):
        load_broker_config(write(tmp_path, {**REQUIRED, "broker.heartbeat.interval.ms": "1"}),
                           {}, {})
    with pytest.raises(ConfigError, match="not an address others can connect to"):
        load_broker_config(write(tmp_path, {**REQUIRED, "listeners": "http://0.0.0.0:9192"}),
                           {}, {})
    with pytest.raises(ConfigError, match="only one log directory"):
        load_broker_config(write(tmp_path, {**REQUIRED, "log.dirs": "/a,/b"}), {}, {})
    with pytest.raises(ConfigError, match="https://h:1 serves TLS: set ssl\\.certfile"):
        load_broker_config(write(tmp_path, {**REQUIRED, "listeners": "https://h:1"}), {}, {})


def test_the_token_file_is_read_stripped(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("  crt_secret\n")
    config = load_broker_config(write(tmp_path, {**REQUIRED, "broker.token.file": str(token)}),
                                {}, {})
    assert config.broker_token() == "crt_secret"
    token.write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        config.broker_token()


def test_a_wildcard_listener_needs_an_advertised_one() -> None:
    from chunkraft.controller.addresses import Listener

    config = BrokerConfig(node_id=1, controller_quorum_bootstrap_servers=("http://c:1",),
                          listeners=Listener("http", "0.0.0.0", 9192), log_dirs=(Path("/l"),),
                          advertised_listeners=Listener("https", "b1", 9443),
                          ssl_certfile=None)
    assert config.listener_name == "HTTPS" and config.advertised.url == "https://b1:9443"


def test_docs_list_every_setting() -> None:
    text = DOCS.read_text()
    missing = [s.name for s in SETTINGS if f"`{s.name}`" not in text]
    assert not missing, f"docs/broker.md does not list {missing}"


def test_chunkraft_broker_exits_2_on_a_configuration_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from chunkraft.cli.main import main

    status = main(["broker", "--config", write(tmp_path, REQUIRED), "--override", "node.id=-1"])
    assert status == 2
    assert "error: node.id (command line)" in capsys.readouterr().err
    assert main(["broker", "--config", str(tmp_path / "missing.properties")]) == 2
    missing = tmp_path / "missing.properties"
    assert capsys.readouterr().err == f"error: config file {missing} does not exist\n"
