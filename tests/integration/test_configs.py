"""Configurations with real processes: 3 controllers and 3 brokers, and ``chunkraft configs`` /
``chunkraft topics --config`` run as the command an operator types (``python -m chunkraft``).

One cluster for the module: alter a topic's retention.ms and describe it (DYNAMIC_TOPIC_CONFIG),
set a cluster-wide broker default and see a topic inherit it (DYNAMIC_DEFAULT_BROKER_CONFIG),
refuse ``cleanup.policy=compact`` and an unknown key with INVALID_CONFIG changing nothing, and
create a topic with ``--config``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import chunkraft
from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import broker_cluster

SOURCE = str(Path(chunkraft.__file__).resolve().parents[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("configs")) as running:
        yield running


def chunkraft_cli(cluster: LocalCluster, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m chunkraft ARGV`` against every controller, the leader first (a command
    reads what the one before it wrote from the leader, which applied it before answering)."""
    leader = cluster.leader_id()
    nodes = sorted(cluster.nodes.values(), key=lambda n: n.node_id != leader)
    command = [sys.executable, "-m", "chunkraft", *argv,
               "--bootstrap-server", ",".join(node.url for node in nodes),
               "--command-config", str(cluster.command_config_path)]
    environment = {k: v for k, v in os.environ.items() if k != "CHUNKRAFT_TOKEN"}
    environment["PYTHONPATH"] = SOURCE
    return subprocess.run(command, capture_output=True, text=True, timeout=60,
                          env=environment, check=False)


def ok(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    return result.stdout.splitlines()


def test_configs_alter_describe_inherit_refuse_and_create(cluster: LocalCluster) -> None:
    ok(chunkraft_cli(cluster, "topics", "--create", "--topic", "orders", "--partitions", "2",
                     "--replication-factor", "3"))

    # A topic's own value: DYNAMIC_TOPIC_CONFIG, with the default it overrides as a synonym.
    assert ok(chunkraft_cli(cluster, "configs", "--alter", "--entity-type", "topics",
                            "--entity-name", "orders", "--add-config", "retention.ms=1000")) \
        == ["Completed updating config for topic orders."]
    assert ok(chunkraft_cli(cluster, "configs", "--describe", "--entity-type", "topics",
                            "--entity-name", "orders")) == [
        "Dynamic configs for topic orders are:",
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:log.retention.ms=604800000}"]

    described = ok(chunkraft_cli(cluster, "topics", "--describe", "--topic", "orders"))
    assert described[0].endswith("\tConfigs: retention.ms=1000")

    # A cluster-wide broker default, inherited by the topic through the key's synonym.
    assert ok(chunkraft_cli(cluster, "configs", "--alter", "--entity-type", "brokers",
                            "--entity-default", "--add-config", "log.retention.bytes=1048576")) \
        == ["Completed updating default config for brokers in the cluster."]
    assert ok(chunkraft_cli(cluster, "configs", "--describe", "--entity-type", "brokers",
                            "--entity-default")) == [
        "Default configs for brokers in the cluster are:",
        "  log.retention.bytes=1048576 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=1048576, "
        "DEFAULT_CONFIG:log.retention.bytes=-1}"]
    every = ok(chunkraft_cli(cluster, "configs", "--describe", "--all", "--entity-type",
                             "topics", "--entity-name", "orders"))
    assert every[0] == "All configs for topic orders are:"
    assert "  retention.bytes=1048576 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:" \
           "log.retention.bytes=1048576, DEFAULT_CONFIG:log.retention.bytes=-1}" in every
    assert "  compression.type=producer sensitive=false synonyms={DEFAULT_CONFIG:" \
           "compression.type=producer}" in every
    assert len(every) == 1 + 9

    # Refusals: INVALID_CONFIG on the error line, exit 1, nothing changed (not even the
    # good key sent with the bad one).
    for bad, reason in (("cleanup.policy=compact", "compact is not supported by chunkraft"),
                        ("no.such.key=1", "Unknown topic config name: no.such.key")):
        refused = chunkraft_cli(cluster, "configs", "--alter", "--entity-type", "topics",
                                "--entity-name", "orders", "--add-config",
                                f"retention.ms=5,{bad}")
        assert refused.returncode == 1
        assert refused.stdout == ""
        assert refused.stderr.startswith(
            "Error while executing config command : INVALID_CONFIG: "), refused.stderr
        assert reason in refused.stderr
    dynamic = ok(chunkraft_cli(cluster, "configs", "--describe", "--entity-type", "topics",
                               "--entity-name", "orders"))
    assert dynamic[1].startswith("  retention.ms=1000 ")
    assert len(dynamic) == 2

    # A topic created with --config; a bad one creates nothing.
    ok(chunkraft_cli(cluster, "topics", "--create", "--topic", "events", "--partitions", "1",
                     "--replication-factor", "2", "--config", "retention.ms=60000",
                     "--config", "max.message.bytes=2000000"))
    created = ok(chunkraft_cli(cluster, "configs", "--describe", "--entity-type", "topics",
                               "--entity-name", "events"))
    assert [line.split(" ")[2] for line in created[1:]] == [
        "max.message.bytes=2000000", "retention.ms=60000"]
    refused = chunkraft_cli(cluster, "topics", "--create", "--topic", "compacted",
                            "--partitions", "1", "--replication-factor", "1",
                            "--config", "cleanup.policy=compact")
    assert refused.returncode == 1
    assert "INVALID_CONFIG" in refused.stderr and "compact" in refused.stderr
    listed = ok(chunkraft_cli(cluster, "topics", "--list"))
    assert "compacted" not in listed and {"orders", "events"} <= set(listed)
