"""Listeners in Kafka's syntax (chunkraft.controller.kafka_listeners): the entries of
``listeners``, the security protocol map, the Kafka listeners and what they advertise, the SASL
mechanisms and ``controller.kafka.endpoints``."""

from __future__ import annotations

import pytest

from chunkraft.controller.addresses import MAX_NODE_ID, Listener
from chunkraft.controller.kafka_listeners import (
    KafkaListener,
    ListenerEntry,
    advertised_kafka,
    kafka_listeners,
    parse_kafka_endpoints,
    parse_listener_entries,
    parse_mechanisms,
    parse_protocol_map,
    rest_listener,
)

# --- parse_listener_entries -------------------------------------------------------------------


def test_http_and_kafka_entries_are_split_in_the_order_written() -> None:
    entries = parse_listener_entries(
        "http://127.0.0.1:9090, SASL_PLAINTEXT://127.0.0.1:9092,SSL://b1.test:9093")
    assert entries == (
        ListenerEntry("HTTP", "127.0.0.1", 9090, Listener("http", "127.0.0.1", 9090)),
        ListenerEntry("SASL_PLAINTEXT", "127.0.0.1", 9092),
        ListenerEntry("SSL", "b1.test", 9093),
    )
    assert rest_listener(entries) == Listener("http", "127.0.0.1", 9090)


def test_https_is_the_rest_listener_too() -> None:
    entries = parse_listener_entries("PLAINTEXT://h:9092,https://h:9443")
    assert [entry.name for entry in entries] == ["PLAINTEXT", "HTTPS"]
    assert rest_listener(entries) == Listener("https", "h", 9443)


def test_no_http_entry_means_no_rest_listener() -> None:
    assert rest_listener(parse_listener_entries("PLAINTEXT://h:9092")) is None


def test_an_empty_host_binds_every_interface() -> None:
    (entry,) = parse_listener_entries("SSL://:9093")
    assert (entry.host, entry.port) == ("0.0.0.0", 9093)


def test_an_ipv6_host_is_written_in_brackets_and_read_without_them() -> None:
    (entry,) = parse_listener_entries("SASL_PLAINTEXT://[::1]:9092")
    assert (entry.host, entry.port) == ("::1", 9092)
    with pytest.raises(ValueError, match=r"brackets"):
        parse_listener_entries("SASL_PLAINTEXT://::1:9092")


def test_a_trailing_slash_is_allowed() -> None:
    (entry,) = parse_listener_entries("PLAINTEXT://h:9092/")
    assert (entry.host, entry.port) == ("h", 9092)


def test_names_are_upper_cased() -> None:
    (entry,) = parse_listener_entries("internal://h:9092")
    assert entry.name == "INTERNAL"


@pytest.mark.parametrize(("text", "message"), [
    ("PLAINTEXT://a:9092,plaintext://b:9093", r"listener name PLAINTEXT is given twice"),
    ("PLAINTEXT://a:9092,SSL://b:9092", r"port 9092 is given twice \(PLAINTEXT and SSL\)"),
    ("http://a:9090,PLAINTEXT://a:9090", r"port 9090 is given twice \(HTTP and PLAINTEXT\)"),
    ("http://a:9090,http://b:9091", r"only one http:// or https:// listener"),
    ("http://a:9090,https://b:9091", r"only one http:// or https:// listener"),
])
def test_names_ports_and_the_http_entry_are_unique(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_listener_entries(text)


@pytest.mark.parametrize("name", ["1ST", "_X", "BAD NAME", "A" * 65, "NAME!"])
def test_a_bad_listener_name_is_refused_naming_the_entry(name: str) -> None:
    with pytest.raises(ValueError, match=r"is not a listener name") as caught:
        parse_listener_entries(f"{name}://h:9092")
    assert f"{name}://h:9092" in str(caught.value)


def test_the_longest_name_allowed_has_64_characters() -> None:
    (entry,) = parse_listener_entries(f"{'A' * 64}://h:9092")
    assert entry.name == "A" * 64


@pytest.mark.parametrize(("text", "message"), [
    ("", r"has an empty entry"),
    ("PLAINTEXT://h:9092,,SSL://h:9093", r"has an empty entry"),
    ("h:9092", r"'h:9092' is not http://host:port"),
    ("PLAINTEXT://h", r"'PLAINTEXT://h': 'h' is not host:port"),
    ("PLAINTEXT://h:0", r"port must be a number from 1 to 65535"),
    ("PLAINTEXT://h:65536", r"port must be a number from 1 to 65535"),
    ("PLAINTEXT://h:x", r"port must be a number"),
    ("PLAINTEXT://[::1:9092", r"\[ipv6-address\]:port"),
])
def test_malformed_entries_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_listener_entries(text)


def test_a_scheme_that_is_a_well_formed_name_is_left_to_the_protocol_check() -> None:
    (entry,) = parse_listener_entries("ftp://h:21")
    assert entry == ListenerEntry("FTP", "h", 21)
    with pytest.raises(ValueError, match=r"FTP is not a security protocol"):
        kafka_listeners((entry,), {})


# --- parse_protocol_map -----------------------------------------------------------------------


def test_the_protocol_map_reads_name_protocol_pairs_in_any_case() -> None:
    assert parse_protocol_map(" internal:sasl_plaintext , EXTERNAL:SSL,") == {
        "INTERNAL": "SASL_PLAINTEXT", "EXTERNAL": "SSL"}
    assert parse_protocol_map("") == {}


@pytest.mark.parametrize(("text", "message"), [
    ("INTERNAL", r"'INTERNAL' is not NAME:PROTOCOL"),
    ("1X:SSL", r"'1X:SSL' is not NAME:PROTOCOL"),
    (":SSL", r"is not NAME:PROTOCOL"),
    ("INTERNAL:TLS", r"TLS is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ("INTERNAL:", r"\(empty\) is not one of"),
])
def test_a_bad_protocol_map_entry_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_protocol_map(text)


# --- kafka_listeners --------------------------------------------------------------------------


def test_a_listener_named_after_a_protocol_has_that_protocol() -> None:
    entries = parse_listener_entries("http://h:9090,SASL_PLAINTEXT://h:9092,SSL://:9093")
    assert kafka_listeners(entries, {}) == (
        KafkaListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "h", 9092),
        KafkaListener("SSL", "SSL", "0.0.0.0", 9093),
    )


def test_the_map_gives_other_names_their_protocol_and_may_remap_a_protocol_name() -> None:
    entries = parse_listener_entries("INTERNAL://h:9092,PLAINTEXT://h:9093")
    found = kafka_listeners(entries, {"INTERNAL": "SASL_SSL", "PLAINTEXT": "SSL",
                                      "UNUSED": "PLAINTEXT"})
    assert found == (KafkaListener("INTERNAL", "SASL_SSL", "h", 9092),
                     KafkaListener("PLAINTEXT", "SSL", "h", 9093))
    assert found[0].uses_sasl and found[0].uses_tls and found[0].protocol_id == 3
    assert not found[1].uses_sasl and found[1].uses_tls and found[1].protocol_id == 1


def test_an_unmapped_name_is_refused_with_the_fix() -> None:
    entries = parse_listener_entries("http://h:9090,INTERNAL://h:9092")
    with pytest.raises(ValueError, match=r"INTERNAL is not a security protocol; map it in "
                                         r"listener.security.protocol.map"):
        kafka_listeners(entries, {"OTHER": "SSL"})


def test_only_http_entries_give_no_kafka_listener() -> None:
    assert kafka_listeners(parse_listener_entries("http://h:9090"), {}) == ()


def test_a_kafka_listener_shows_its_address_in_bootstrap_form() -> None:
    assert KafkaListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "::1", 9092).address == \
        "[::1]:9092"
    listener = KafkaListener("PLAINTEXT", "PLAINTEXT", "b1.test", 9092)
    assert str(listener) == "PLAINTEXT://b1.test:9092"
    assert (listener.protocol_id, listener.uses_sasl, listener.uses_tls) == (0, False, False)
    assert KafkaListener("S", "SASL_PLAINTEXT", "h", 1).protocol_id == 2


# --- advertised_kafka -------------------------------------------------------------------------


def _kafka(text: str, protocols: dict[str, str] | None = None) -> tuple[KafkaListener, ...]:
    return kafka_listeners(parse_listener_entries(text), protocols or {})


def test_a_listener_is_advertised_as_its_entry_of_the_same_name() -> None:
    listeners = _kafka("SASL_PLAINTEXT://:9092,SSL://127.0.0.1:9093")
    advertised = _kafka("SASL_PLAINTEXT://b1.example:19092")
    assert advertised_kafka(listeners, advertised) == (
        KafkaListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "b1.example", 19092),
        KafkaListener("SSL", "SSL", "127.0.0.1", 9093),  # not advertised: itself
    )


def test_a_wildcard_listener_without_an_advertised_entry_is_refused() -> None:
    with pytest.raises(ValueError, match=r"binds every interface: give "
                                         r"SSL://<reachable host>:9093 in advertised.listeners"):
        advertised_kafka(_kafka("SSL://:9093"), ())
    with pytest.raises(ValueError, match=r"binds every interface"):
        advertised_kafka(_kafka("SSL://[::]:9093"), ())


def test_a_wildcard_advertised_entry_is_refused() -> None:
    with pytest.raises(ValueError, match=r"binds every interface"):
        advertised_kafka(_kafka("SSL://h:9093"), _kafka("SSL://0.0.0.0:9093"))


def test_an_advertised_name_that_is_not_a_listener_is_refused() -> None:
    with pytest.raises(ValueError, match=r"advertised listener EXTERNAL, SSL is not among the "
                                         r"listeners"):
        advertised_kafka(_kafka("SASL_PLAINTEXT://h:9092"),
                         _kafka("SSL://h:9093,EXTERNAL://h:9094", {"EXTERNAL": "SSL"}))


# --- parse_mechanisms -------------------------------------------------------------------------


def test_mechanisms_are_read_in_any_case_once_each_in_order() -> None:
    assert parse_mechanisms("oauthbearer, PLAIN,Plain") == ("OAUTHBEARER", "PLAIN")
    assert parse_mechanisms("PLAIN") == ("PLAIN",)


@pytest.mark.parametrize(("text", "message"), [
    ("SCRAM-SHA-256", r"'SCRAM-SHA-256' is not one of PLAIN, OAUTHBEARER"),
    ("PLAIN,GSSAPI", r"'GSSAPI' is not one of"),
    ("", r"name at least one mechanism"),
    (" , ", r"name at least one mechanism"),
])
def test_unknown_or_no_mechanisms_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_mechanisms(text)


# --- parse_kafka_endpoints --------------------------------------------------------------------


def test_endpoints_are_id_at_host_port_in_the_order_written() -> None:
    assert parse_kafka_endpoints("1@c1.test:9094, 2@[::1]:9095,3@127.0.0.1:9096") == (
        (1, "c1.test", 9094), (2, "::1", 9095), (3, "127.0.0.1", 9096))
    assert parse_kafka_endpoints("") == ()


@pytest.mark.parametrize(("text", "message"), [
    ("c1.test:9094", r"'c1.test:9094' is not id@host:port"),
    ("x@c1.test:9094", r"'x@c1.test:9094' is not id@host:port"),
    ("-1@c1.test:9094", r"is not id@host:port"),
    ("1@c1.test", r"'1@c1.test': 'c1.test' is not host:port"),
    ("1@c1.test:0", r"port must be a number from 1 to 65535"),
    ("1@a:9094,1@b:9095", r"node id 1 is given twice"),
])
def test_a_bad_or_repeated_endpoint_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_kafka_endpoints(text)


def test_an_endpoint_id_above_int32_is_refused() -> None:
    # Node ids are Kafka's int32 (controller.quorum.voters refuses a larger one): an id past
    # 2^31-1 here is only found when DescribeCluster's int32 broker_id fails to encode, on
    # every --bootstrap-controller request.
    with pytest.raises(ValueError):
        parse_kafka_endpoints(f"{MAX_NODE_ID + 1}@c1.test:9094")
