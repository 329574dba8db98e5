"""The arrow engine's report beyond the rules: skipped rules, diff, load, timelines, edges."""

from __future__ import annotations

from pathlib import Path

from chunkraft.audit.arrow import run_audit
from chunkraft.audit.arrow.found import fixed
from chunkraft.audit.catalog import RULES, Needs
from chunkraft.audit.inputs import AuditInputs, AuditSettings
from chunkraft.export.directory import write_export
from chunkraft.export.manifest import ExportKind, Manifest
from chunkraft.export.tables import CONTROLLER_TABLES
from tests.support.audit_corruptions import CORRUPTIONS
from tests.support.audit_snapshots import (
    ORDERS,
    TIME_MS,
    broker_chunk_replicas,
    clean_records,
    clean_scenario,
    write_scenario,
    write_snapshot_export,
)


def test_rules_without_their_input_are_skipped(tmp_path: Path) -> None:
    path = write_snapshot_export(tmp_path / "s", clean_records(), offset=1, time_ms=TIME_MS)
    report = run_audit(AuditInputs.load(path), AuditSettings())
    skipped = {r.rule_id: r.skipped for r in report.rules if r.skipped}
    assert skipped == {
        rule.id: ("needs --previous" if rule.needs is Needs.PREVIOUS else "needs --brokers-state")
        for rule in RULES if rule.needs is not Needs.SNAPSHOT}
    assert report.diff is None and report.exit_code() == 0
    assert set(report.seconds) == {"read", "rules", "load", "diff", "total", "verify"}


def test_an_empty_snapshot_audits_clean(tmp_path: Path) -> None:
    manifest = Manifest(ExportKind.CONTROLLER_SNAPSHOT, "c", 0, 1, TIME_MS, 0, "test")
    path = write_export(tmp_path / "empty", manifest, {}, CONTROLLER_TABLES)
    report = run_audit(AuditInputs.load(path), AuditSettings())
    assert report.violations() == 0
    assert (report.load.brokers, report.load.hottest, report.timelines) == ([], [], [])


def test_load_counts_every_replica_entry_per_broker(tmp_path: Path) -> None:
    scenario = clean_scenario()
    report = run_audit(write_scenario(scenario, tmp_path), AuditSettings())
    per_broker = {b.broker_id: b.chunk_replicas + b.partition_replicas
                  for b in report.load.brokers}
    assert per_broker == broker_chunk_replicas(scenario.records)
    assert all(b.bytes is not None and b.bytes > 0 for b in report.load.brokers)
    assert [r.rack for r in report.load.racks] == ["r0", "r1"]
    # events-0 holds the most offsets (3 chunks of 1,000), then orders-0 (4 chunks, 411)
    assert [(h.topic, h.partition_id, h.chunks, h.offsets) for h in report.load.hottest[:2]] == [
        ("events", 0, 3, 3_000), ("orders", 0, 4, 411)]
    assert [t.why for t in report.timelines] == ["hottest"] * len(report.timelines)
    first = report.timelines[0]
    assert [c.start_offset for c in first.chunks] == [0, 1_000, 2_000, 3_000]
    assert [c.active for c in first.chunks] == [False, False, False, True]


def test_diff_counts_created_partitions_and_chunks(tmp_path: Path) -> None:
    scenario = CORRUPTIONS["topics.orphans"]()  # one partition and one chunk more
    report = run_audit(write_scenario(scenario, tmp_path), AuditSettings())
    assert report.diff is not None
    assert {k: v for k, v in report.diff.counts.items() if v} == {
        "partitions_created": 1, "chunks_created": 1}
    assert report.diff.samples["chunks_created"][0]["replicas_after"] == [0, 2]
    # the violating partitions come first among the timelines
    assert report.timelines[0].why == "violation"


def test_moves_are_compared_as_sorted_lists(tmp_path: Path) -> None:
    scenario = CORRUPTIONS["replicas.count"]()  # events-0 now on 0, 2, 3
    report = run_audit(write_scenario(scenario, tmp_path), AuditSettings())
    assert report.diff is not None
    moved = report.diff.samples["partitions_moved"]
    assert [(m["topic"], m["replicas_before"], m["replicas_after"]) for m in moved] == [
        ("events", [0, 2], [0, 2, 3])]
    assert report.diff.counts["chunks_moved"] == 1  # orders-0 chunk 300 lost broker 3
    assert str(ORDERS) in {m["topic_id"] for m in report.diff.samples["chunks_moved"]}


def test_fixed_rounds_as_java_does() -> None:
    assert [fixed(12.25, 1), fixed(0.15, 1), fixed(2.0, 2), fixed(1.005, 2)] == [
        "12.3", "0.2", "2.00", "1.01"]
