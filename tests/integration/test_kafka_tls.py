"""Kafka's protocol over TLS: SASL_SSL with stock clients (kcat; confluent-kafka with
OAUTHBEARER), and an SSL listener whose principal is the client certificate's CN.

One cluster serving TLS everywhere (``LocalCluster(tls=True)``: a private CA, client
certificates required), its nodes' Kafka listeners SASL_SSL; broker 0 also has an SSL listener.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chunkraft.local.local_cluster import LocalCluster
from chunkraft.local.node_process import free_ports
from tests.support.brokers import kill_everything, wait_until

TIMEOUT = 30
SSL_PORTS: list[int] = []
"""The port of broker 0's SSL listener, once the module's cluster is made."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("kafka-tls"), tls=True)
    (ssl_port,) = free_ports(1)
    broker = cluster.broker_nodes[0]
    cluster.broker_node_properties[0] = {"listeners": (
        f"{broker.url},SASL_SSL://127.0.0.1:{broker.kafka_port},SSL://127.0.0.1:{ssl_port}")}
    SSL_PORTS[:] = [ssl_port]
    try:
        cluster.prepare()
        cluster.start()
        cluster.wait_ready(timeout=60)
        cluster.start_brokers()
        cluster.wait_brokers_ready(timeout=60)
        yield cluster
    finally:
        kill_everything(cluster)


def tls_settings(cluster: LocalCluster, common_name: str) -> dict[str, str]:
    certificate, key = cluster.certificate_paths(common_name)
    if not certificate.exists():
        cluster.issue(common_name)
    return {"ssl.ca.location": str(cluster.ca_path),
            "ssl.certificate.location": str(certificate), "ssl.key.location": str(key)}


def kcat(settings: dict[str, str], servers: str, *arguments: str
         ) -> subprocess.CompletedProcess[str]:
    command = ["kcat", "-b", servers, *arguments]
    for key, value in settings.items():
        command += ["-X", f"{key}={value}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)


def test_kcat_lists_the_cluster_over_sasl_ssl(cluster: LocalCluster) -> None:
    settings = {**cluster.kafka_client_settings(), **tls_settings(cluster, "admin")}
    assert settings["security.protocol"] == "sasl_ssl"
    done = kcat(settings, cluster.kafka_bootstrap_servers, "-L", "-J", "-m", "10")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert sorted(b["id"] for b in listing["brokers"]) == [0, 1, 2]


def test_confluent_kafka_creates_a_topic_with_oauthbearer_over_sasl_ssl(
        cluster: LocalCluster) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    token = cluster.admin_token

    def oauth(_config: Any) -> tuple[str, float]:
        return token, time.time() + 3600

    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers,
                         "security.protocol": "SASL_SSL", "sasl.mechanisms": "OAUTHBEARER",
                         "oauth_cb": oauth, **tls_settings(cluster, "admin")})
    admin.poll(1)  # runs oauth_cb
    admin.create_topics([NewTopic("tls-oauth", 2, 3)])["tls-oauth"].result(TIMEOUT)
    # CreateTopics answers once the controllers committed the topic; the broker that answers
    # Metadata learns of it moments later (as in Kafka), so the listing is awaited, bounded.
    wait_until(lambda: "tls-oauth" in admin.list_topics(timeout=TIMEOUT).topics,
               "tls-oauth in a broker's metadata", timeout=30, interval=0.2)
    found = admin.list_topics(timeout=TIMEOUT).topics
    assert len(found["tls-oauth"].partitions) == 2


def test_a_wrong_bearer_token_is_refused_over_oauthbearer(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[KafkaError] = []
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers,
                         "security.protocol": "SASL_SSL", "sasl.mechanisms": "OAUTHBEARER",
                         "oauth_cb": lambda _c: ("crt_not-a-token", time.time() + 3600),
                         "error_cb": errors.append, **tls_settings(cluster, "admin")})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    wait_until(lambda: (admin.poll(0.1), bool(errors))[1], "an authentication error",
               timeout=10)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


def ssl_address(cluster: LocalCluster) -> str:
    return f"127.0.0.1:{SSL_PORTS[0]}"


def test_on_an_ssl_listener_the_principal_is_the_certificates_cn(cluster: LocalCluster) -> None:
    admin = {"security.protocol": "ssl", **tls_settings(cluster, "admin")}
    done = kcat(admin, ssl_address(cluster), "-L", "-J", "-m", "10")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    # Brokers on the listener of the same name: only broker 0 has an SSL listener.
    assert [b["id"] for b in listing["brokers"]] == [0]
    assert "tls-oauth" in {t["topic"] for t in listing["topics"]}
    # User:mallory (a certificate from the same CA, no ACLs) sees no topic at all.
    mallory = {"security.protocol": "ssl", **tls_settings(cluster, "mallory")}
    done = kcat(mallory, ssl_address(cluster), "-L", "-J", "-m", "10")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["topics"] == []


def test_a_certificate_principal_cannot_have_a_broker_forward_its_admin_request(
        cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": ssl_address(cluster), "security.protocol": "SSL",
                         **tls_settings(cluster, "admin")})
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([NewTopic("tls-cert", 1, 1)])["tls-cert"].result(TIMEOUT)
    error = refused.value.args[0]
    assert error.name() == "CLUSTER_AUTHORIZATION_FAILED", error
    assert "without a bearer token" in error.str(), error


def test_a_client_without_a_certificate_is_refused_by_the_handshake(
        cluster: LocalCluster) -> None:
    settings = {"security.protocol": "ssl", "ssl.ca.location": str(cluster.ca_path)}
    done = kcat(settings, ssl_address(cluster), "-L", "-m", "5")
    assert done.returncode != 0
