"""Hand-built AuditReport values for the report writers' tests (no engine, no Spark)."""

from __future__ import annotations

from typing import Any

from chunkraft.audit.catalog import RULES, Needs
from chunkraft.audit.model import (
    AuditReport,
    BrokerLoad,
    DiffSummary,
    ExportSummary,
    LoadSummary,
    PartitionHeat,
    RackLoad,
    RuleResult,
    Timeline,
    TimelineChunk,
)

EVIL = "<script>alert(1)</script>"
AMP = "a&b"
TOPIC_ID = "5f0c1d2e-0000-4000-8000-000000000001"
EVIL_ID = "5f0c1d2e-0000-4000-8000-000000000002"


def snapshot(path: str = "/exports/now", offset: int = 1200) -> ExportSummary:
    return ExportSummary(path, "controller-snapshot", "cluster-1", offset, 3,
                         1_763_800_000_000, {"brokers": 3, "chunks": 4, "partitions": 2,
                                             "topics": 2})


def violation(rule_id: str, topic: str | None, partition_id: int | None,
              start_offset: int | None, broker_id: int | None = None,
              detail: str = "wrong") -> dict[str, Any]:
    return {"rule_id": rule_id, "topic_id": TOPIC_ID if topic == AMP else EVIL_ID,
            "topic": topic, "partition_id": partition_id, "start_offset": start_offset,
            "broker_id": broker_id, "detail": detail}


def rules(fired: dict[str, list[dict[str, Any]]] | None = None,
          counts: dict[str, int] | None = None, *, previous: bool = False,
          states: bool = False) -> list[RuleResult]:
    """One result per catalog rule; rules needing an absent input are skipped."""
    fired = fired or {}
    counts = counts or {}
    results = []
    for rule in RULES:
        if rule.needs is Needs.PREVIOUS and not previous:
            results.append(RuleResult(rule.id, 0, skipped="needs --previous"))
        elif rule.needs is Needs.BROKER_STATES and not states:
            results.append(RuleResult(rule.id, 0, skipped="needs --brokers-state"))
        else:
            sample = fired.get(rule.id, [])
            results.append(RuleResult(rule.id, counts.get(rule.id, len(sample)), sample))
    return results


def load(with_bytes: bool = False) -> LoadSummary:
    brokers = [
        BrokerLoad(0, "rack-a", False, 2, 3, 1, 400, 4096 if with_bytes else None),
        BrokerLoad(1, "rack-a", False, 2, 4, 1, 650, 8192 if with_bytes else None),
        BrokerLoad(2, None, True, 2, 1, 0, 100, None),
    ]
    racks = [RackLoad("rack-a", 2, 4, 7, 1050, 12288 if with_bytes else None),
             RackLoad(None, 1, 2, 1, 100, None)]
    skew: dict[str, float | None] = {"chunk_replicas": 1.5, "partition_replicas": 1.0,
                                     "leaders": 1.5, "offsets": 1.7}
    hottest = [PartitionHeat(AMP, TOPIC_ID, 0, 3, 600, 9000 if with_bytes else None),
               PartitionHeat(EVIL, EVIL_ID, 1, 1, 100)]
    return LoadSummary(brokers, racks, skew, hottest)


def timeline(topic: str = AMP, topic_id: str = TOPIC_ID, partition_id: int = 0,
             why: str = "hottest") -> Timeline:
    """KIP-1114's example: 0..3 on [0, 1, 2], 4..7 (held to 9) on [1, 2, 0], active from 8."""
    return Timeline(topic, topic_id, partition_id, [
        TimelineChunk(0, 3, 3, 1_763_799_000_000, [0, 1, 2], False),
        TimelineChunk(4, 7, 9, 1_763_799_100_000, [1, 2, 0], False),
        TimelineChunk(8, -1, -1, 1_763_799_200_000, [0, 2], True),
    ], why)


def clean_report() -> AuditReport:
    return AuditReport(1_763_800_100_000, "spark", snapshot(), [], rules(), load(), [],
                       seconds={"read": 1.5, "rules": 3.25, "load": 0.5, "total": 5.25},
                       settings={"sample_size": 20, "max_skew": 2.0})


def violations_report() -> AuditReport:
    fired = {
        "chunks.contiguous": [violation("chunks.contiguous", AMP, 0, 4, None,
                                        "starts at 4, previous stops at 2"),
                              violation("chunks.contiguous", EVIL, 1, 100, None,
                                        "starts at 100 <b>bold</b>")],
        "replicas.no_leader": [violation("replicas.no_leader", EVIL, 1, 8, None, "leader -1")],
        "replicas.registered": [violation("replicas.registered", None, 2, 0, 7,
                                          "broker 7 not registered")],
    }
    return AuditReport(1_763_800_100_000, "arrow", snapshot(), [],
                       rules(fired, {"chunks.contiguous": 25}), load(),
                       [timeline(why="violation"), timeline(EVIL, EVIL_ID, 1)],
                       seconds={"read": 0.1, "total": 0.2}, settings={"max_skew": 2.0})


def diff_report() -> AuditReport:
    previous = snapshot("/exports/before", 900)
    states = [ExportSummary("/exports/broker-0", "broker-state", "cluster-1", 1200, 3,
                            1_763_800_000_500, {"local_replicas": 3}, broker_id=0)]
    diff = DiffSummary(previous, {
        "topics_created": 1, "topics_removed": 0, "partitions_created": 2,
        "partitions_removed": 0, "partitions_moved": 1, "chunks_created": 3,
        "chunks_removed": 1, "chunks_moved": 0,
    }, {
        "topics_created": [{"topic": EVIL, "topic_id": EVIL_ID, "partition_id": None,
                            "start_offset": None, "replicas_before": None,
                            "replicas_after": None}],
        "partitions_moved": [{"topic": AMP, "topic_id": TOPIC_ID, "partition_id": 0,
                              "start_offset": None, "replicas_before": [0, 1],
                              "replicas_after": [1, 2]}],
    })
    return AuditReport(1_763_800_100_000, "spark", snapshot(), states,
                       rules(previous=True, states=True), load(with_bytes=True), [timeline()],
                       diff=diff, seconds={"read": 1.0, "diff": 0.5, "total": 2.0})
