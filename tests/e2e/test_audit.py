"""End to end: a real quorum, operations through its API, an export, and audits of it.

One module, one cluster (3 controller processes, no broker agent: the chunks are cut and moved
through the controllers' API, as an operator would). The cluster is stopped once the snapshot
is exported, so the audits (Spark, the JVM) do not share the machine with it.

- ``chunkraft snapshot export --bootstrap-server`` as a process: the export appears whole.
- ``chunkraft audit`` (Spark engine) as a process on that export: exit 0, the three report
  files, ``report.json`` clean.
- A crafted bad snapshot (the export with one chunk's StartOffset moved, rewritten with
  ``write_export``), audited through ``spark-submit`` with deploy/spark/submit-local.sh: exit
  1, and ``chunks.contiguous`` names exactly that chunk.
- Damaged copies of the export, audited by ``chunkraft audit`` (Spark) as a process: a listed
  file deleted is exit 2 naming it before any JVM starts; a data page that cannot be decoded
  (summed into the manifest, so only Spark's executor meets it) is exit 2 with one line naming
  the file, and nothing else on stderr: no Java stack trace, no JVM start-up lines.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.export.directory import write_export
from chunkraft.export.manifest import Manifest
from chunkraft.export.tables import CONTROLLER_TABLES
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid
from tests.support.audit_integrity import CHUNKS_FILE, DAMAGES
from tests.support.cluster_client import admin_client, new_key, wait_converged

pytestmark = pytest.mark.slow

BROKERS = [0, 1, 2, 3]
EXPORT_TIMEOUT = 60
AUDIT_TIMEOUT = 240
# Without broker agents nobody heartbeats: keep the registered brokers unfenced.
PROPERTIES = {"broker.session.timeout.ms": "600000"}


@dataclass(frozen=True)
class Exported:
    """The module's export and what the operations made."""

    directory: Path
    cluster_id: str
    cut_at: tuple[int, int]  # orders-0's inactive chunks start at 0 and at 100


def chunkraft(*argv: str, timeout: float,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``chunkraft ARGV`` as a process, with the test's Python (and its venv)."""
    environment = {**os.environ, "PYSPARK_PYTHON": sys.executable,
                   "PYSPARK_DRIVER_PYTHON": sys.executable,
                   "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "chunkraft", *argv], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=environment)


def cluster_id_forms(cluster_id: str) -> set[str]:
    return {cluster_id, str(parse_kafka_uuid(cluster_id))}


def stop(cluster: LocalCluster) -> None:
    """Stops every process this module started (SIGTERM, then SIGKILL), by PID only."""
    try:
        cluster.stop(timeout=10.0)
    finally:
        for node in cluster.nodes.values():
            if node.process is not None and node.process.poll() is None:
                node.process.kill()
                node.process.wait(timeout=10)


def _ok(outcome: Any) -> dict[str, Any]:
    assert outcome.acknowledged, outcome.describe()
    body: dict[str, Any] = outcome.body
    assert body.get("error_code", 0) == 0, body
    return body


def operate(cluster: LocalCluster) -> tuple[int, int]:
    """Brokers, topics, an expansion (KIP-195/253), two chunk cuts and a chunk move
    (KIP-1114), all through the controllers' API. Returns orders-0's chunk starts."""
    now = int(time.time() * 1000)
    with admin_client(cluster) as client:
        client.register_and_unfence(BROKERS, cluster.cluster_id)
        created = _ok(client.create_topics([("orders", 3, 3), ("payments", 2, 2)],
                                           key=new_key()))
        assert all(t["error_code"] == 0 for t in created["topics"]), created
        expanded = _ok(client.create_partitions("orders", 5, key=new_key()))
        assert all(t["error_code"] == 0 for t in expanded["results"]), expanded
        # orders-0: [0..99] held to 104 (an open transaction at the cut), then [100..199]
        for start, end, replicas, ts in ((100, 104, [1, 2, 3], now + 1),
                                         (200, 199, [2, 3, 0], now + 2)):
            cut = _ok(client.create_chunks("orders", 0, broker_ids=replicas,
                                           start_offset=start, prev_end_offset=end,
                                           start_timestamp=ts, key=new_key()))
            errors = [p["error_code"] for t in cut["topics"] for p in t["partitions"]]
            assert errors == [0], cut
        # payments-1: one cut, then its inactive chunk moves (no broker ever reports the copy,
        # so the move stays in progress: adding and removing replicas in the snapshot)
        _ok(client.create_chunks("payments", 1, broker_ids=[0, 1], start_offset=50,
                                 prev_end_offset=49, start_timestamp=now + 3, key=new_key()))
        # Read where the writes were acknowledged as applied: the leader (a follower the
        # writes were forwarded through may not have applied the last one yet).
        leader = cluster.leader_id()
        assert leader is not None
        metadata = client.metadata(url=cluster.nodes[leader].url)
    payments = next(t for t in metadata["topics"] if t["name"] == "payments")
    (chunk,) = payments["partitions"][1]["chunks"]
    target = [b for b in BROKERS if b not in chunk["replicas"]][:1] + chunk["replicas"][1:]
    with AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token)) as admin:
        (moved,) = admin.alter_chunk_assignments(
            [{"topic": "payments", "partition": 1, "start_offset": 0, "replicas": target}])
    assert moved["error_code"] == 0, moved
    return 0, 100


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    base = tmp_path_factory.mktemp("audit-e2e")
    cluster = LocalCluster(base / "cluster", extra_properties=PROPERTIES)
    try:
        cluster.prepare()
        cluster.start()
        cluster.wait_ready(timeout=60)
        cut_at = operate(cluster)
        wait_converged(cluster, list(cluster.nodes), timeout=30)
        out = base / "export"
        done = chunkraft("snapshot", "export", "--bootstrap-server", ",".join(cluster.urls),
                         "--command-config", str(cluster.command_config_path),
                         "--out", str(out), timeout=EXPORT_TIMEOUT)
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        assert "exported controller-snapshot" in done.stdout, done.stdout
    finally:
        stop(cluster)
    yield Exported(out, cluster.cluster_id, cut_at)


def test_export_holds_the_operations(exported: Exported) -> None:
    manifest = Manifest.read(exported.directory)
    # Kafka's base64 form, as the CLI prints it
    assert manifest.cluster_id == kafka_uuid_str(parse_kafka_uuid(exported.cluster_id))
    raw = json.loads((exported.directory / "manifest.json").read_text(encoding="utf-8"))
    assert raw["cluster_id"] == manifest.cluster_id and raw["schema_version"] == 2
    (chunks_file,) = raw["tables"]["chunks"]["files"]
    assert chunks_file["path"] == CHUNKS_FILE and chunks_file["rows"] == 3
    assert len(chunks_file["sha256"]) == 64
    assert manifest.tables["topics"].rows == 2
    assert manifest.tables["partitions"].rows == 7  # orders 5 + payments 2
    assert manifest.tables["chunks"].rows == 3
    assert manifest.tables["brokers"].rows == len(BROKERS)
    chunks = pq.read_table(exported.directory / "chunks")
    assert sorted(chunks.column("start_offset").to_pylist()) == [0, 0, 100]
    assert not list(exported.directory.parent.glob(".*tmp-*"))


def audit(snapshot: Path, report: Path, env: dict[str, str] | None = None,
          ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = chunkraft("audit", "--snapshot", str(snapshot), "--report", str(report),
                     "--engine", "spark", "--master", "local[1]",
                     "--conf", "spark.ui.enabled=false",
                     "--conf", "spark.sql.shuffle.partitions=2", timeout=AUDIT_TIMEOUT,
                     env=env)
    value = json.loads((report / "report.json").read_text(encoding="utf-8"))
    return done, value


def test_the_export_audits_clean(exported: Exported, tmp_path: Path) -> None:
    """... and, as on a fresh machine, the audit leaves its driver JVM's class archive in the
    cache for the next run (off for the rest of the suite)."""
    report, cache = tmp_path / "report", tmp_path / "cache"
    done, value = audit(exported.directory, report,
                        env={"CHUNKRAFT_SPARK_CDS": "1", "CHUNKRAFT_CACHE_DIR": str(cache)})
    fired = {r["rule_id"]: r for r in value["rules"] if r["count"]}
    assert done.returncode == 0, f"{fired}\n{done.stdout}\n{done.stderr[-3000:]}"
    assert sorted(p.name for p in report.iterdir()) == ["report.html", "report.json",
                                                         "report.md"]
    assert value["status"] == "clean" and value["engine"] == "spark"
    assert value["snapshot"]["cluster_id"] in cluster_id_forms(exported.cluster_id)
    assert not fired
    assert {b["broker_id"] for b in value["load"]["brokers"]} == set(BROKERS)
    timelines = {(t["topic"], t["partition_id"]): t for t in value["timelines"]}
    orders = timelines[("orders", 0)]
    assert [c["start_offset"] for c in orders["chunks"]] == [0, 100, 200]
    assert "<svg" in (report / "report.html").read_text(encoding="utf-8")
    # the one line on stderr: no JVM start-up lines, no log output
    assert [line for line in done.stderr.splitlines() if line.strip()] == [
        "audit: saving the Spark driver's class archive for faster starts (once)"], done.stderr
    assert done.stdout.startswith("audit: clean: nothing found; exit 0: no rule fired")
    archives = list((cache / "spark-cds").glob("*.jsa"))
    assert len(archives) == 1 and archives[0].stat().st_size > 1_000_000
    record = json.loads(archives[0].with_suffix(".json").read_text(encoding="utf-8"))
    assert record["size"] == archives[0].stat().st_size


def corrupt(source: Path, target: Path, *, partition: int, start: int, new_start: int) -> Path:
    """A copy of export ``source`` at ``target`` with chunk (orders, partition, start)
    starting at ``new_start`` instead: a gap of ``new_start - start`` offsets."""
    manifest = Manifest.read(source)
    tables = {spec.name: pq.read_table(source / spec.name) for spec in CONTROLLER_TABLES}
    topics = tables["topics"]
    orders_id = topics.filter(pc.equal(topics["name"], "orders"))["topic_id"][0]
    chunks = tables["chunks"]
    hit = pc.and_(pc.and_(pc.equal(chunks["topic_id"], orders_id),
                          pc.equal(chunks["partition_id"], partition)),
                  pc.equal(chunks["start_offset"], start))
    assert pc.sum(hit.cast(pa.int64())).as_py() == 1
    moved = pc.if_else(hit, pa.scalar(new_start, chunks["start_offset"].type),
                       chunks["start_offset"])
    index = chunks.schema.get_field_index("start_offset")
    tables["chunks"] = chunks.set_column(index, chunks.schema.field(index), moved)
    return write_export(target, replace(manifest, tables={}, exported_at_ms=0,
                                        source=f"corrupted copy of {source}"),
                        tables, CONTROLLER_TABLES)


def submit(snapshot: Path, report: Path) -> tuple[subprocess.CompletedProcess[str],
                                                   dict[str, Any]]:
    """The audit through ``spark-submit``, with the example of deploy/spark/ as written."""
    script = Path(__file__).resolve().parents[2] / "deploy" / "spark" / "submit-local.sh"
    env = {**os.environ, "MASTER": "local[1]", "PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", str(script), "--snapshot", str(snapshot), "--report", str(report),
         "--conf", "spark.sql.shuffle.partitions=2"],
        capture_output=True, text=True, timeout=AUDIT_TIMEOUT, env=env, check=False)
    value = json.loads((report / "report.json").read_text(encoding="utf-8"))
    return done, value


def test_a_crafted_bad_snapshot_fails_with_the_right_row(exported: Exported,
                                                         tmp_path: Path) -> None:
    """Audited through spark-submit (deploy/spark/submit-local.sh), as a scheduler would."""
    _, second = exported.cut_at
    bad = corrupt(exported.directory, tmp_path / "bad", partition=0, start=second,
                  new_start=second + 5)
    done, value = submit(bad, tmp_path / "report")
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr[-3000:]}"
    assert value["status"] == "violations"
    fired = {r["rule_id"]: r for r in value["rules"] if r["count"]}
    assert set(fired) == {"chunks.contiguous"}, fired
    rule = fired["chunks.contiguous"]
    assert rule["count"] == 1 and rule["severity"] == "error"
    (row,) = rule["sample"]
    assert (row["topic"], row["partition_id"], row["start_offset"]) == ("orders", 0,
                                                                         second + 5)
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "### `chunks.contiguous` (error)" in markdown


def test_damaged_exports_fail_with_one_line_naming_the_file(exported: Exported,
                                                            tmp_path: Path) -> None:
    lines = {}
    for damage in ("listed file deleted", "bad data page, summed"):
        copy = tmp_path / damage.replace(" ", "-").replace(",", "") / "export"
        shutil.copytree(exported.directory, copy)
        expected = DAMAGES[damage](copy)
        done, value = audit(copy, copy.parent / "report")
        assert done.returncode == expected.exit_code == 2, f"{done.stdout}\n{done.stderr}"
        said = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(said) == 1, done.stderr
        (line,) = said
        assert line.startswith("chunkraft audit: error: ") and str(copy / CHUNKS_FILE) in line
        for fragment in expected.fragments:
            assert fragment in line, line
        assert value["status"] == "error" and value["message"] in line
        lines[damage] = line
    # the second failed inside Spark's executor, reading the page
    assert "cannot read" in lines["bad data page, summed"]
