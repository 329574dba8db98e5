"""The kafkajs driver (tests/support/kafkajs.py, tests/kafka_clients/kafkajs/admin.js) against
the Kafka capture server: its calls reach the wire with the SASL settings given, results and
errors come back as one JSON line, and a command it cannot run raises."""

from __future__ import annotations

import socket

import pytest

from chunkraft.kafka.codec.messages import decode, decode_request_header
from tests.support.kafka_capture import CLUSTER_ID, capture_server
from tests.support.kafkajs import KafkajsDriverError, kafkajs

SASL = {"mechanism": "plain", "username": "alice", "password": "secret"}


def test_list_topics_with_sasl_plain_authenticates_then_asks_for_every_topic() -> None:
    with capture_server() as server:
        answer = kafkajs({"brokers": [server.bootstrap], "sasl": SASL, "op": "listTopics"})
        frames = server.frames()
    assert answer == {"ok": True, "result": []}
    apis = [frame.api_name for frame in frames if frame.connection == 1]
    assert apis[:3] == ["ApiVersions", "SaslHandshake", "SaslAuthenticate"]
    assert "Metadata" in apis
    authenticate = next(frame for frame in frames if frame.api_name == "SaslAuthenticate")
    header = decode_request_header(authenticate.data)
    body = decode("SaslAuthenticateRequest", authenticate.api_version,
                  authenticate.data[header.size:])
    assert body["auth_bytes"] == b"\x00alice\x00secret"


def test_without_sasl_no_sasl_frame_is_sent_and_describe_cluster_reads_metadata() -> None:
    with capture_server() as server:
        answer = kafkajs({"brokers": [server.bootstrap], "sasl": None,
                          "op": "describeCluster"})
        apis = {frame.api_name for frame in server.frames()}
    assert answer["ok"] is True
    assert answer["result"] == {"brokers": [{"nodeId": 1, "host": "127.0.0.1",
                                             "port": server.port}],
                                "controller": 1, "clusterId": CLUSTER_ID}
    assert apis == {"ApiVersions", "Metadata"}


def test_an_error_is_a_result_with_kafkajs_names_and_its_cause() -> None:
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    answer = kafkajs({"brokers": [f"127.0.0.1:{port}"], "sasl": None, "op": "listTopics"},
                     timeout=20)
    assert answer["ok"] is False
    assert answer["error"]["name"] == "KafkaJSNumberOfRetriesExceeded"
    assert answer["error"]["cause"]["name"] == "KafkaJSConnectionError"
    assert answer["error"]["cause"]["code"] == "ECONNREFUSED"


def test_a_call_the_capture_server_does_not_answer_fails_without_hanging() -> None:
    with capture_server() as server:
        answer = kafkajs({"brokers": [server.bootstrap], "sasl": None, "op": "createTopics",
                          "args": {"topics": [{"topic": "orders", "numPartitions": 1}]}},
                         timeout=20)
    assert answer["ok"] is False
    assert answer["error"]["name"] == "KafkaJSConnectionClosedError"


def test_a_command_the_driver_cannot_run_raises() -> None:
    with pytest.raises(KafkajsDriverError, match="unknown op deleteEverything"):
        kafkajs({"brokers": ["127.0.0.1:1"], "op": "deleteEverything"})
    with pytest.raises(KafkajsDriverError, match="brokers must be a non-empty list"):
        kafkajs({"brokers": [], "op": "listTopics"})
