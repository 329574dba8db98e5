"""The local cluster's Kafka ports: never one another node was given already."""

from __future__ import annotations

from pathlib import Path

from chunkraft.local.local_kafka import give_kafka_ports, ports_in_use
from chunkraft.local.node_process import ControllerProcess, free_ports


def test_kafka_ports_avoid_every_port_the_nodes_were_given(tmp_path: Path) -> None:
    ports = free_ports(6)
    nodes = [ControllerProcess(i + 1, ports[2 * i], ports[2 * i + 1], tmp_path / "data",
                               tmp_path / "p", tmp_path / "log") for i in range(3)]
    nodes[0].kafka_port = 1234
    give_kafka_ports(nodes)
    assert nodes[0].kafka_port == 1234  # kept
    assert ports_in_use(nodes) == {*ports, 1234, nodes[1].kafka_port, nodes[2].kafka_port}
    assert len({nodes[1].kafka_port, nodes[2].kafka_port} | set(ports) | {1234}) == 9
