"""The properties files of a local cluster's nodes: what each controller and broker reads.

Pure functions of the cluster's layout: the launcher (:mod:`chunkraft.local.local_cluster`)
owns the nodes, the credentials and the CA, and writes the text these return, mode 0600 (a
controller's file holds the Raft password). Extra properties are applied last, the node's own
over every node's, so a test or ``--controller-override`` can change any setting the launcher
does not manage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from chunkraft.local.node_process import BrokerProcess, ControllerProcess

__all__ = ["NodeTls", "broker_properties", "controller_properties"]


@dataclass(frozen=True)
class NodeTls:
    """One node's certificate and key, the cluster's CA, and its ``ssl.client.auth``."""

    certificate: Path
    key: Path
    ca: Path
    client_auth: str

    def properties(self) -> dict[str, str]:
        return {"ssl.certfile": str(self.certificate), "ssl.keyfile": str(self.key),
                "ssl.ca.file": str(self.ca), "ssl.client.auth": self.client_auth}


def controller_properties(node: ControllerProcess, quorum: Sequence[ControllerProcess], *,
                          cluster_id: str, password: str, credentials_path: Path,
                          super_user: str, kafka_protocol: str, tls: NodeTls | None,
                          extra: Mapping[str, str]) -> dict[str, str]:
    """``node``'s settings in a quorum of ``quorum`` (every controller, ``node`` among them)."""
    properties = {
        "node.id": str(node.node_id),
        "cluster.id": cluster_id,
        "controller.quorum.voters": ",".join(f"{n.node_id}@127.0.0.1:{n.raft_port}"
                                             for n in quorum),
        "controller.http.urls": ",".join(f"{n.node_id}@{n.url}" for n in quorum),
        "data.dir": str(node.data_dir),
        "raft.password": password,
        "listeners": node.url,
        "auth.credentials.file": str(credentials_path),
        "super.users": super_user,
    }
    if node.kafka_port:
        properties["listeners"] += f",{kafka_protocol}://127.0.0.1:{node.kafka_port}"
        properties["controller.kafka.endpoints"] = ",".join(
            f"{n.node_id}@127.0.0.1:{n.kafka_port}" for n in quorum if n.kafka_port)
    if tls is not None:
        properties.update(tls.properties())
    properties.update(extra)
    return properties


def broker_properties(broker: BrokerProcess, *, cluster_id: str, bootstrap: str,
                      credentials_path: Path, super_user: str, kafka_protocol: str,
                      tls: NodeTls | None, extra: Mapping[str, str]) -> dict[str, str]:
    """``broker``'s settings; ``bootstrap`` is the controllers' URLs, comma-separated."""
    properties = {
        "node.id": str(broker.broker_id),
        "cluster.id": cluster_id,
        "controller.quorum.bootstrap.servers": bootstrap,
        "listeners": broker.url + (f",{kafka_protocol}://127.0.0.1:{broker.kafka_port}"
                                   if broker.kafka_port else ""),
        "log.dirs": str(broker.log_dir),
        "broker.token.file": str(broker.token_path),
        "auth.credentials.file": str(credentials_path),
        "super.users": super_user,
    }
    if tls is not None:
        properties.update(tls.properties())
    properties.update(extra)
    return properties
