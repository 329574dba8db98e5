"""Snapshot exports against real processes (3 controllers + 3 broker agents on 127.0.0.1, one
cluster for the module): ``chunkraft snapshot export --bootstrap-server`` gives the controller's
image, every Raft dump is exported by itself (``metadata.snapshot.export.dir``), and
``--broker-server`` gives what a broker holds.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.broker_client import BrokerClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.export.manifest import ExportKind, Manifest
from chunkraft.export.tables import TABLES_BY_NAME, table_to_records
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid
from tests.support.brokers import broker_cluster, wait_until
from tests.support.cluster_client import image_from_snapshot

CHUNKRAFT = str(Path(sys.executable).parent / "chunkraft")
EXPORTS = "exports"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    base = tmp_path_factory.mktemp("export")
    properties = {
        "raft.log.compaction.min.entries": "50",
        "raft.log.compaction.min.time.ms": "1000",
        "metadata.snapshot.export.dir": str(base / EXPORTS),
        "metadata.snapshot.export.retain": "2",
    }
    with broker_cluster(base / "cluster", properties=properties) as running:
        yield running


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> Iterator[AdminClient]:
    with AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token)) as client:
        client.create_topic("orders", 3, 3)
        client.alter_topic_partitions("orders", 4)  # KIP-253 prior partition epochs
        client.create_topic("events", 2, 2)
        yield client


def export(*args: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHUNKRAFT, "snapshot", "export", *args, "--out", str(out)],
                          capture_output=True, text=True, timeout=120)


def read_rows(out: Path, table: str) -> list[Any]:
    spec = TABLES_BY_NAME[table]
    return table_to_records(spec, pq.read_table(out / table, schema=spec.schema))


def test_bootstrap_export_is_the_controllers_image(cluster: LocalCluster, admin: AdminClient,
                                                   tmp_path: Path) -> None:
    out = tmp_path / "snapshot"
    done = export("--bootstrap-server", ",".join(cluster.urls), "--command-config",
                  str(cluster.command_config_path), out=out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("exported controller-snapshot ")
    manifest = Manifest.read(out)
    assert manifest.kind is ExportKind.CONTROLLER_SNAPSHOT
    answer = httpx.get(f"{cluster.urls[0]}/controller/v1/snapshot", headers=cluster.headers,
                       timeout=30)
    assert answer.status_code == 200
    image = image_from_snapshot(answer.content, int(answer.headers["x-metadata-offset"]))
    # the manifest spells the cluster id as Kafka does (base64)
    assert manifest.cluster_id == kafka_uuid_str(parse_kafka_uuid(answer.headers["x-cluster-id"]))
    records = list(image.to_records())
    for table in ("topics", "partitions", "chunks", "acls"):
        spec = TABLES_BY_NAME[table]
        want = sorted((r for r in records if type(r) is spec.row), key=repr)
        assert sorted(read_rows(out, table), key=repr) == want, table
    assert {r.broker_id for r in read_rows(out, "brokers")} == {0, 1, 2}
    assert {t.name for t in read_rows(out, "topics")} >= {"orders", "events"}
    orders = {p.partition_id: p for p in read_rows(out, "partitions")
              if p.topic_id == image.topics.get_by_name("orders").topic_id}  # type: ignore[union-attr]
    assert sorted(orders) == [0, 1, 2, 3]
    assert orders[3].prior_partition_epochs
    # an existing output is refused, with exit status 1
    again = export("--bootstrap-server", cluster.urls[0], "--command-config",
                   str(cluster.command_config_path), out=out)
    assert again.returncode == 1 and "already exists" in again.stderr


def test_a_refused_download_names_the_kafka_error(cluster: LocalCluster, tmp_path: Path
                                                  ) -> None:
    config = tmp_path / "nobody.properties"
    config.write_text(f"bearer.token={cluster.add_token('User:nobody', 'export test')}\n")
    deadline = time.monotonic() + 30
    while True:  # the nodes re-read the credentials file about once a second
        done = export("--bootstrap-server", cluster.urls[0], "--command-config", str(config),
                      out=tmp_path / "refused")
        if "SASL_AUTHENTICATION_FAILED" not in done.stderr or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert done.returncode == 1
    assert "CLUSTER_AUTHORIZATION_FAILED (error code 31)" in done.stderr, done.stderr
    assert not (tmp_path / "refused").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["nobody.properties"]


def test_every_dump_is_exported(cluster: LocalCluster, admin: AdminClient) -> None:
    exports = cluster.base_dir.parent / EXPORTS
    for i in range(60):  # one Raft entry each: a compaction (and a dump) on every node
        admin.create_topic(f"dumped-{i}", 1, 1)

    def complete() -> list[Path]:
        if not exports.is_dir():
            return []
        return [p for p in exports.iterdir() if (p / "manifest.json").is_file()]

    wait_until(lambda: bool(complete()), "an automatic export after a dump", 90, 0.5)
    wait_until(lambda: not any(p.name.startswith(".dump-link-") for p in exports.iterdir()),
               "the export processes removed their links", 60, 0.5)
    (newest, *_) = sorted(complete(), reverse=True)
    manifest = Manifest.read(newest)
    assert newest.name == f"{manifest.offset:020d}-{manifest.epoch:010d}"
    assert manifest.tables["topics"].rows >= 2
    assert len(complete()) <= 2  # metadata.snapshot.export.retain
    assert not any(".tmp-" in p.name for p in exports.iterdir())


def test_broker_state_export_is_what_the_broker_holds(cluster: LocalCluster,
                                                      admin: AdminClient,
                                                      tmp_path: Path) -> None:
    broker_id = 0
    leader = None

    def produced() -> bool:
        nonlocal leader
        for candidate in cluster.broker_nodes:
            with BrokerClient(cluster.broker_url(candidate), token=cluster.admin_token,
                              timeout=30) as broker:
                answer = broker.produce_records("orders", 0, 4, [
                    (b"k%d" % i, b"v%d" % i, int(time.time() * 1000)) for i in range(20)],
                    acks=-1)
            if answer.error_code == 0:
                leader = candidate
                return True
        return False

    wait_until(produced, "20 records produced to orders-0", 30, 0.2)
    assert leader is not None

    def local_view() -> dict[str, Any]:
        answer = httpx.get(f"{cluster.broker_url(broker_id)}/broker/v1/local-replicas",
                           headers=cluster.headers, timeout=10)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def replicated() -> bool:
        return any(p["topic"] == "orders" and p["partition"] == 0
                   and p["log_end_offset"] == 20 for p in local_view()["partitions"])

    wait_until(replicated, f"orders-0 replicated to broker {broker_id}", 30, 0.2)
    admin.set_config("topics", "orders", "retention.ms", "86400000")

    def followed() -> bool:
        return {"topic": "orders", "name": "retention.ms", "value": "86400000",
                "source": "DYNAMIC_TOPIC_CONFIG"} in local_view()["topic_configs"]

    wait_until(followed, f"broker {broker_id} applies orders' retention.ms", 30, 0.2)
    out = tmp_path / "broker"
    done = export("--broker-server", cluster.broker_url(broker_id), "--command-config",
                  str(cluster.command_config_path), out=out)
    assert done.returncode == 0, done.stderr
    manifest = Manifest.read(out)
    assert (manifest.kind, manifest.broker_id) == (ExportKind.BROKER_STATE, broker_id)
    assert manifest.cluster_id == kafka_uuid_str(parse_kafka_uuid(cluster.cluster_id))
    view = local_view()
    logs = {(r.topic, r.partition_id): r for r in read_rows(out, "local_logs")}
    assert set(logs) == {(p["topic"], p["partition"]) for p in view["partitions"]}
    assert logs[("orders", 0)].log_end_offset == 20
    replicas = {(r.topic, r.partition_id, r.chunk_start_offset): r
                for r in read_rows(out, "local_replicas")}
    answer = httpx.get(f"{cluster.urls[0]}/controller/v1/snapshot", headers=cluster.headers,
                       timeout=30)
    image = image_from_snapshot(answer.content, int(answer.headers["x-metadata-offset"]))
    assigned = {(topic.name, p.partition_id) for topic in image.topics
                for p in topic.partitions.values() if broker_id in p.replicas}
    assert assigned, "broker 0 replicates something"
    assert {(t, p) for (t, p, _), r in replicas.items() if r.assigned and r.active} == assigned
    held = replicas[("orders", 0, 0)]
    assert (held.assigned, held.first_offset_held, held.last_offset_held) == (True, 0, 19)
    assert held.bytes_held > 0
    segments = read_rows(out, "local_segments")
    assert sum(s.size_bytes for s in segments if s.topic == "orders" and s.partition_id == 0
               ) == logs[("orders", 0)].size_bytes
    configs = {(r.topic, r.name): (r.value, r.source) for r in read_rows(out, "local_configs")}
    assert {r.broker_id for r in read_rows(out, "local_configs")} == {broker_id}
    assert configs[("orders", "retention.ms")] == ("86400000", "DYNAMIC_TOPIC_CONFIG")
    assert configs[("orders", "min.insync.replicas")][1] == "STATIC_BROKER_CONFIG"
    assert {t for t, _ in configs} >= {t for t, _ in assigned}
