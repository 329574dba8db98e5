"""The Kafka side of a local cluster: listener ports, bootstrap lists, the client's settings.

Every node of a :class:`~chunkraft.local.local_cluster.LocalCluster` gets one Kafka listener
on 127.0.0.1, SASL_PLAINTEXT (SASL_SSL when the cluster serves TLS), whose port is kept with the
node's others in ``cluster.json``. A stock client reaches the brokers at the bootstrap list
Kafka's way (``host:port,...``) with the admin's SASL/PLAIN settings under librdkafka's names,
which kcat (``-F``) and confluent-kafka read as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from chunkraft.local.node_process import BrokerProcess, ControllerProcess, free_ports

__all__ = ["bootstrap_list", "client_settings", "give_kafka_ports", "kafka_protocol",
           "ports_in_use", "properties_text"]


def give_kafka_ports(nodes: Sequence[ControllerProcess | BrokerProcess]) -> None:
    """A free Kafka listener port for every node of ``nodes`` that has none yet."""
    without = [node for node in nodes if not node.kafka_port]
    # Not a port another node already has (its Raft, HTTP or Kafka port).
    taken = ports_in_use(nodes)
    for node, port in zip(without, free_ports(len(without), avoid=taken), strict=True):
        node.kafka_port = port


def ports_in_use(nodes: Sequence[ControllerProcess | BrokerProcess]) -> set[int]:
    """Every port ``nodes`` were given (Raft, HTTP, Kafka): a later pick must not repeat one,
    since a port released after its pick may be offered again."""
    return {port for node in nodes
            for port in (getattr(node, "raft_port", 0), node.http_port, node.kafka_port)
            if port}


def kafka_protocol(tls: bool) -> str:
    """The security protocol of the nodes' Kafka listeners."""
    return "SASL_SSL" if tls else "SASL_PLAINTEXT"


def bootstrap_list(nodes: Iterable[ControllerProcess | BrokerProcess]) -> str:
    """``127.0.0.1:port,...`` of the nodes that have a Kafka listener."""
    return ",".join(f"127.0.0.1:{node.kafka_port}" for node in nodes if node.kafka_port)


def client_settings(principal: str, token: str, tls: bool, ca_path: Path) -> dict[str, str]:
    """librdkafka's settings for ``principal`` (SASL/PLAIN: username without ``User:``,
    password its bearer token), with the CA when the listeners serve TLS."""
    settings = {"security.protocol": kafka_protocol(tls).lower(), "sasl.mechanisms": "PLAIN",
                "sasl.username": principal.partition(":")[2] or principal,
                "sasl.password": token}
    if tls:
        settings["ssl.ca.location"] = str(ca_path)
    return settings


def properties_text(settings: dict[str, str]) -> str:
    """``key=value`` lines of a properties file."""
    return "".join(f"{key}={value}\n" for key, value in settings.items())
