"""A controller's ``listeners`` in Kafka's syntax: load_controller_config splits the HTTP
listener from the Kafka-protocol ones, and reads advertised.listeners, the protocol map and the
Kafka listener settings."""

from __future__ import annotations

from chunkraft.controller.addresses import Listener
from chunkraft.controller.kafka_listeners import KafkaListener
from tests.unit.controller.config_support import Layers

SASL = KafkaListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "127.0.0.1", 9092)


def test_listeners_split_into_the_http_listener_and_the_kafka_ones(layers: Layers) -> None:
    layers.file["listeners"] = "http://127.0.0.1:9090,SASL_PLAINTEXT://127.0.0.1:9092"
    config = layers.load()
    assert config.listeners == Listener("http", "127.0.0.1", 9090)
    assert config.advertised_listeners == config.listeners
    assert config.kafka_listeners == (SASL,)
    assert config.kafka_advertised_listeners == (SASL,)
    assert config.http_url_of(1) == "http://127.0.0.1:9090"


def test_without_kafka_entries_there_are_no_kafka_listeners(layers: Layers) -> None:
    config = layers.load()
    assert config.listeners == Listener("http", "127.0.0.1", 9090)
    assert config.kafka_listeners == () and config.kafka_advertised_listeners == ()


def test_the_kafka_settings_take_kafkas_defaults(layers: Layers) -> None:
    config = layers.load()
    assert config.sasl_enabled_mechanisms == ("PLAIN", "OAUTHBEARER")
    assert config.listener_security_protocol_map == ()
    assert config.controller_kafka_endpoints is None
    assert config.socket_request_max_bytes == 8 * 1024 * 1024
    assert config.max_connections_per_ip == 1000
    assert config.connections_max_idle_ms == 600_000
    assert config.sasl_handshake_timeout_ms == 10_000


def test_advertised_kafka_entries_replace_theirs_by_name(layers: Layers) -> None:
    layers.file["listeners"] = "http://127.0.0.1:9090,SASL_PLAINTEXT://:9092,PLAINTEXT://127.0.0.1:9093"
    layers.file["advertised.listeners"] = "SASL_PLAINTEXT://c1.example:19092"
    config = layers.load()
    # No http entry in advertised.listeners: the HTTP listener advertises itself.
    assert config.advertised_listeners == Listener("http", "127.0.0.1", 9090)
    assert config.kafka_listeners[0] == KafkaListener(
        "SASL_PLAINTEXT", "SASL_PLAINTEXT", "0.0.0.0", 9092)
    assert config.kafka_advertised_listeners == (
        KafkaListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "c1.example", 19092),
        KafkaListener("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9093))


def test_the_protocol_map_names_a_listeners_protocol(layers: Layers) -> None:
    layers.file["listeners"] = "http://127.0.0.1:9090,INTERNAL://127.0.0.1:9092"
    layers.file["listener.security.protocol.map"] = "INTERNAL:SASL_PLAINTEXT"
    config = layers.load()
    assert config.kafka_listeners == (
        KafkaListener("INTERNAL", "SASL_PLAINTEXT", "127.0.0.1", 9092),)
    assert config.listener_security_protocol_map == (("INTERNAL", "SASL_PLAINTEXT"),)


def test_listeners_from_the_environment_are_split_too(layers: Layers) -> None:
    layers.env["CHUNKRAFT_LISTENERS"] = "http://127.0.0.1:9090,SASL_PLAINTEXT://127.0.0.1:9092"
    assert layers.load().kafka_listeners == (SASL,)


def test_kafka_listener_settings_are_read(layers: Layers) -> None:
    layers.file["listeners"] = "http://127.0.0.1:9090,SASL_PLAINTEXT://127.0.0.1:9092"
    layers.file["sasl.enabled.mechanisms"] = "oauthbearer"
    layers.file["controller.kafka.endpoints"] = "1@127.0.0.1:9092,2@c2.test:9092"
    layers.file["socket.request.max.bytes"] = "4096"
    layers.file["connections.max.idle.ms"] = "1500"
    config = layers.load()
    assert config.sasl_enabled_mechanisms == ("OAUTHBEARER",)
    assert config.controller_kafka_endpoints == ((1, "127.0.0.1", 9092), (2, "c2.test", 9092))
    assert config.socket_request_max_bytes == 4096
    assert config.connections_max_idle_ms == 1500


def test_listeners_without_an_http_entry_are_refused(layers: Layers) -> None:
    layers.file["listeners"] = "SASL_PLAINTEXT://127.0.0.1:9092"
    error = layers.error()
    assert error.setting == "listeners"
    assert "give the HTTP API's http://host:port" in str(error)
    assert str(layers.path) in str(error)


def test_an_unmapped_listener_name_is_refused_naming_listeners(layers: Layers) -> None:
    layers.file["listeners"] = "http://127.0.0.1:9090,INTERNAL://127.0.0.1:9092"
    error = layers.error()
    assert error.setting == "listeners"
    assert "INTERNAL is not a security protocol" in str(error)


def test_a_wildcard_kafka_listener_needs_an_advertised_entry(layers: Layers) -> None:
    layers.file["listeners"] = "http://127.0.0.1:9090,SASL_PLAINTEXT://:9092"
    error = layers.error()
    assert error.setting == "listeners"
    assert "binds every interface" in str(error)


def test_an_advertised_listener_that_is_not_listened_on_is_refused(layers: Layers) -> None:
    layers.file["listeners"] = "http://127.0.0.1:9090,SASL_PLAINTEXT://127.0.0.1:9092"
    layers.overrides["advertised.listeners"] = "SSL://c1.example:9093"
    error = layers.error()
    assert "advertised listener SSL is not among the listeners" in str(error)


def test_a_bad_mechanism_is_refused_naming_the_setting(layers: Layers) -> None:
    layers.file["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-512"
    error = layers.error()
    assert error.setting == "sasl.enabled.mechanisms"
    assert "SCRAM-SHA-512" in str(error)


# --- TLS for Kafka listeners ------------------------------------------------------------------
# docs/kafka-protocol.md: "SSL listeners use the node's ssl.certfile, ssl.keyfile, ssl.ca.file
# and ssl.client.auth", and its example pairs an http:// REST listener with SASL_SSL.


def test_a_tls_kafka_listener_takes_the_certificate_beside_an_http_rest_listener(
        layers: Layers) -> None:
    layers.file["listeners"] = "http://127.0.0.1:9090,SASL_SSL://127.0.0.1:9093"
    layers.file.update({"ssl.certfile": "c.pem", "ssl.keyfile": "k.pem"})
    config = layers.load()
    assert config.kafka_listeners == (
        KafkaListener("SASL_SSL", "SASL_SSL", "127.0.0.1", 9093),)
    assert config.listeners.scheme == "http"


def test_a_tls_kafka_listener_without_a_certificate_is_refused_at_load(layers: Layers) -> None:
    # Otherwise the configuration loads and the Kafka server refuses to start (ValueError).
    layers.file["listeners"] = "http://127.0.0.1:9090,SSL://127.0.0.1:9093"
    error = layers.error()
    assert "ssl.certfile" in str(error)
