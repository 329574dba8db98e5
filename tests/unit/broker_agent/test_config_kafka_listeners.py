"""A broker's ``listeners`` in Kafka's syntax: load_broker_config splits the data plane's HTTP
listener from the Kafka-protocol ones, and reads advertised.listeners, the protocol map and the
Kafka listener settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.broker_agent.config import BrokerConfig, load_broker_config
from chunkraft.controller.addresses import Listener
from chunkraft.controller.kafka_listeners import KafkaListener
from chunkraft.errors import ConfigError

REQUIRED = {
    "node.id": "0",
    "controller.quorum.bootstrap.servers": "http://127.0.0.1:9090",
    "listeners": "http://127.0.0.1:9090,SASL_PLAINTEXT://127.0.0.1:9092",
    "log.dirs": "/tmp/b0",
}
SASL = KafkaListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "127.0.0.1", 9092)


def load(tmp_path: Path, changes: dict[str, str] | None = None,
         environ: dict[str, str] | None = None) -> BrokerConfig:
    path = tmp_path / "broker.properties"
    values = {**REQUIRED, **(changes or {})}
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()))
    return load_broker_config(str(path), {}, environ or {})


def refused(tmp_path: Path, changes: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, changes)
    return caught.value


def test_listeners_split_into_the_http_listener_and_the_kafka_ones(tmp_path: Path) -> None:
    config = load(tmp_path)
    assert config.listeners == Listener("http", "127.0.0.1", 9090)
    assert config.advertised == config.listeners and config.listener_name == "HTTP"
    assert config.kafka_listeners == (SASL,)
    assert config.kafka_advertised_listeners == (SASL,)


def test_without_kafka_entries_there_are_no_kafka_listeners(tmp_path: Path) -> None:
    config = load(tmp_path, {"listeners": "http://127.0.0.1:9192"})
    assert config.kafka_listeners == () and config.kafka_advertised_listeners == ()


def test_the_kafka_settings_take_kafkas_defaults(tmp_path: Path) -> None:
    config = load(tmp_path)
    assert config.sasl_enabled_mechanisms == ("PLAIN", "OAUTHBEARER")
    assert config.socket_request_max_bytes == 100 * 1024 * 1024
    assert config.max_connections_per_ip == 1000
    assert config.connections_max_idle_ms == 600_000
    assert config.sasl_handshake_timeout_ms == 10_000


def test_advertised_entries_replace_theirs_by_name(tmp_path: Path) -> None:
    config = load(tmp_path, {
        "listeners": "http://0.0.0.0:9090,SASL_PLAINTEXT://:9092,PLAINTEXT://127.0.0.1:9093",
        "advertised.listeners": "SASL_PLAINTEXT://b0.example:19092,http://b0.example:9090"})
    assert config.listeners == Listener("http", "0.0.0.0", 9090)
    assert config.advertised == Listener("http", "b0.example", 9090)
    assert config.kafka_listeners[0].host == "0.0.0.0"
    assert config.kafka_advertised_listeners == (
        KafkaListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "b0.example", 19092),
        KafkaListener("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9093))


def test_advertising_only_kafka_entries_leaves_the_http_listener_itself(tmp_path: Path) -> None:
    config = load(tmp_path, {"advertised.listeners": "SASL_PLAINTEXT://b0.example:19092"})
    assert config.advertised_listeners is None
    assert config.advertised == Listener("http", "127.0.0.1", 9090)
    assert config.kafka_advertised_listeners[0].host == "b0.example"


def test_the_protocol_map_names_a_listeners_protocol(tmp_path: Path) -> None:
    config = load(tmp_path, {"listeners": "http://127.0.0.1:9090,INTERNAL://127.0.0.1:9092",
                             "listener.security.protocol.map": "internal:sasl_plaintext"})
    assert config.kafka_listeners == (
        KafkaListener("INTERNAL", "SASL_PLAINTEXT", "127.0.0.1", 9092),)


def test_listeners_from_the_environment_are_split_too(tmp_path: Path) -> None:
    config = load(tmp_path, environ={
        "CHUNKRAFT_BROKER_LISTENERS": "http://127.0.0.1:9190,PLAINTEXT://127.0.0.1:9192"})
    assert config.listeners.port == 9190
    assert config.kafka_listeners == (KafkaListener("PLAINTEXT", "PLAINTEXT", "127.0.0.1",
                                                    9192),)


def test_kafka_listener_settings_are_read(tmp_path: Path) -> None:
    config = load(tmp_path, {"sasl.enabled.mechanisms": "PLAIN",
                             "socket.request.max.bytes": "4096",
                             "max.connections.per.ip": "3",
                             "sasl.handshake.timeout.ms": "250"})
    assert config.sasl_enabled_mechanisms == ("PLAIN",)
    assert (config.socket_request_max_bytes, config.max_connections_per_ip,
            config.sasl_handshake_timeout_ms) == (4096, 3, 250)


@pytest.mark.parametrize(("changes", "setting", "problem"), [
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9092"}, "listeners",
     "give the data plane's http://host:port"),
    ({"listeners": "http://127.0.0.1:9090,INTERNAL://127.0.0.1:9092"}, "listeners",
     "INTERNAL is not a security protocol"),
    ({"listeners": "http://127.0.0.1:9090,SASL_PLAINTEXT://:9092"}, "listeners",
     "binds every interface"),
    ({"advertised.listeners": "SSL://b0.example:9093"}, "listeners",
     "advertised listener SSL is not among the listeners"),
    ({"listeners": "http://127.0.0.1:9090,PLAINTEXT://127.0.0.1:9090"}, "listeners",
     "port 9090 is given twice"),
    ({"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms", "GSSAPI"),
    ({"socket.request.max.bytes": "10"}, "socket.request.max.bytes", "at least"),
])
def test_bad_kafka_listener_settings_are_refused(tmp_path: Path, changes: dict[str, str],
                                                 setting: str, problem: str) -> None:
    error = refused(tmp_path, changes)
    assert error.setting == setting
    assert problem in str(error)


# --- TLS for Kafka listeners (docs/kafka-protocol.md: SSL listeners use ssl.certfile) ---------


def test_a_tls_kafka_listener_takes_the_certificate_beside_an_http_listener(
        tmp_path: Path) -> None:
    config = load(tmp_path, {"listeners": "http://127.0.0.1:9090,SASL_SSL://127.0.0.1:9093",
                             "ssl.certfile": "c.pem", "ssl.keyfile": "k.pem"})
    assert config.kafka_listeners == (KafkaListener("SASL_SSL", "SASL_SSL", "127.0.0.1",
                                                    9093),)


def test_a_tls_kafka_listener_without_a_certificate_is_refused_at_load(tmp_path: Path) -> None:
    error = refused(tmp_path, {"listeners": "http://127.0.0.1:9090,SSL://127.0.0.1:9093"})
    assert "ssl.certfile" in str(error)
