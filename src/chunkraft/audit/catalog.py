"""The audit's rules: stable ids, severities and what each one checks, engine-independent.

Every engine (Spark in :mod:`chunkraft.audit.spark`, pyarrow in :mod:`chunkraft.audit.arrow`)
implements exactly these rules, by id; the report, the docs (``docs/audit.md``) and the tests
read this catalog. An id never changes meaning: a changed check gets a new id.

Offsets are those of DESIGN §3 (chunk offsets inclusive). "Chunks" below means the inactive
chunks of a partition (the ``chunks`` table) unless the active chunk (the ``partitions`` table)
is named.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["RULES", "RULES_BY_ID", "Needs", "Rule", "Severity"]


class Severity(enum.StrEnum):
    """How bad a violation is; ``error`` and ``warning`` fail the audit by default."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


class Needs(enum.StrEnum):
    """An input a rule needs beyond the snapshot; without it the rule is reported skipped."""

    SNAPSHOT = "snapshot"
    PREVIOUS = "previous"          # --previous DIR: an earlier snapshot of the same cluster
    BROKER_STATES = "broker-states"  # --brokers-state DIR ...: brokers' local state exports


@dataclass(frozen=True)
class Rule:
    """One check: id (``area.name``), severity, a one-line title, what it checks, and an
    example of a violation as an operator would meet it."""

    id: str
    severity: Severity
    title: str
    description: str
    example: str
    needs: Needs = Needs.SNAPSHOT


RULES: tuple[Rule, ...] = (
    # --- chunk coverage per partition -------------------------------------------------------
    Rule("chunks.offsets_ordered", Severity.ERROR,
         "start <= stop <= end in every inactive chunk",
         "An inactive chunk's StartOffset <= StopOffset <= EndOffset.",
         "chunk 100 of orders-3 has StopOffset 120 and EndOffset 110"),
    Rule("chunks.epoch", Severity.ERROR,
         "ChunkEpoch = Epoch in every inactive chunk",
         "An inactive chunk's ChunkEpoch equals its Epoch, as the controller requires of every "
         "ChunkRecord it writes (records/validation.py).",
         "chunk 100 of orders-3 has ChunkEpoch 4 but Epoch 5"),
    Rule("chunks.contiguous", Severity.ERROR,
         "inactive chunks follow each other without gap or overlap",
         "Ordered by StartOffset, each inactive chunk after the first starts at the previous "
         "one's StopOffset + 1, so every offset a consumer may read is in exactly one chunk.",
         "orders-3: chunk 0 stops at 99 but the next chunk starts at 105 (offsets 100..104 "
         "are in no chunk)"),
    Rule("chunks.overlap", Severity.ERROR,
         "chunks overlap only in (StopOffset, EndOffset]",
         "The offsets a chunk holds past its StopOffset (an open transaction at the cut) are "
         "held by the next chunk too: the next inactive chunk's EndOffset is at least this "
         "chunk's EndOffset.",
         "orders-3: chunk 0 ends at 150 but chunk 100, the next, ends at 140"),
    Rule("chunks.active_start", Severity.ERROR,
         "the active chunk starts right after the last inactive chunk",
         "A partition with inactive chunks has StartOffset = the last inactive chunk's "
         "StopOffset + 1.",
         "orders-3 starts its active chunk at 200 but its last inactive chunk stops at 189"),
    Rule("chunks.timestamps", Severity.WARNING,
         "StartTimestamps never decrease along a partition",
         "Ordered by StartOffset (the active chunk last), each chunk's StartTimestamp is at "
         "least the previous one's; -1 (unknown) is ignored.",
         "orders-3: chunk 100 starts at 12:00:05 but chunk 200 at 11:59:58"),
    # --- replicas ---------------------------------------------------------------------------
    Rule("replicas.distinct", Severity.ERROR,
         "no broker twice in a replica list",
         "The replicas of every partition and chunk are distinct broker ids.",
         "orders-3 chunk 0 has replicas [1, 1, 2]"),
    Rule("replicas.count", Severity.ERROR,
         "replica count = the replication factor",
         "A partition's replication factor is its replica count minus its removing replicas; "
         "it equals the topic's (the most common among its partitions, the larger on a tie), "
         "and every inactive chunk's equals its partition's.",
         "orders (RF 3): chunk 0 of orders-3 has 2 replicas"),
    Rule("replicas.isr_subset", Severity.ERROR,
         "the ISR is a non-empty subset of the replicas",
         "Every partition's and chunk's ISR is not empty and every ISR member is a replica.",
         "orders-3 has ISR [4] but replicas [1, 2, 3]"),
    Rule("replicas.lists", Severity.ERROR,
         "adding and removing replicas are replicas; no list names a broker twice",
         "Every partition's and chunk's adding and removing replicas are among its replicas, "
         "and its ISR, adding and removing replicas each name a broker at most once "
         "(replicas.distinct checks the replicas themselves), as the controller requires of "
         "every record it writes (records/validation.py).",
         "chunk 0 of orders-3 is adding broker 5, which is not among its replicas [1, 2, 3]"),
    Rule("replicas.leader_in_isr", Severity.ERROR,
         "the leader is in the ISR",
         "A partition with a leader (>= 0) has it in its ISR.",
         "orders-3 has leader 2 and ISR [1, 3]"),
    Rule("replicas.no_leader", Severity.WARNING,
         "every partition has a leader",
         "A partition whose leader is -1 is offline: nobody can produce to it.",
         "orders-3 has leader -1"),
    Rule("replicas.registered", Severity.ERROR,
         "every replica is a registered broker",
         "Every replica, ISR member and leader of a partition or chunk is in the brokers table.",
         "chunk 0 of orders-3 lists broker 7, which is not registered"),
    Rule("replicas.fenced_broker", Severity.WARNING,
         "no replica on a broker fenced for longer than the threshold",
         "A broker fenced in both snapshots, with the same broker epoch, taken at least "
         "--fenced-threshold apart, still holds replicas (partitions or chunks).",
         "broker 2 has been fenced for 45 min and holds 120 chunk replicas",
         Needs.PREVIOUS),
    Rule("replicas.stuck_move", Severity.WARNING,
         "no replica move older than the threshold",
         "A partition or chunk has the same non-empty adding or removing replicas in both "
         "snapshots, taken at least --stuck-move-threshold apart.",
         "chunk 0 of orders-3 has been adding broker 5 for 2 h",
         Needs.PREVIOUS),
    # --- topics -----------------------------------------------------------------------------
    Rule("topics.unique", Severity.ERROR,
         "topic names and ids are unique",
         "No two topics share a name or a topic id.",
         "two topics are named orders"),
    Rule("topics.partition_ids", Severity.ERROR,
         "partition ids are 0..n-1",
         "A topic's partitions are numbered 0 to its partition count - 1, each once.",
         "orders has partitions 0, 1, 3"),
    Rule("topics.prior_partition_epochs", Severity.ERROR,
         "PriorPartitionEpochs are consistent with KIP-253",
         "A partition created by an expansion lists every prior partition exactly once: its "
         "PriorPartitionEpochs name partitions 0..k-1 with k <= its own id, each with a leader "
         "epoch >= 0.",
         "orders-5 (created when orders grew from 4 to 6) lists prior partitions 0, 1, 3"),
    Rule("topics.orphans", Severity.ERROR,
         "no partition or chunk of a removed topic",
         "Every partition's topic id is in the topics table, and every chunk's (topic id, "
         "partition id) is a partition.",
         "12 chunks of topic id 5f0c... remain after the topic was deleted"),
    # --- producer ids -----------------------------------------------------------------------
    Rule("producer_ids.blocks_overlap", Severity.ERROR,
         "producer id blocks never overlap",
         "The producer id blocks the brokers hand out (from their state exports) are disjoint, "
         "and none reaches past the controller's next producer id.",
         "brokers 1 and 2 both hand out ids 3000..3999",
         Needs.BROKER_STATES),
    Rule("producer_ids.grow", Severity.ERROR,
         "producer ids only grow",
         "The controller's next producer id is not below the previous snapshot's.",
         "next producer id 4000, but 6000 in the previous snapshot",
         Needs.PREVIOUS),
    # --- drift: the brokers' disks against the controller's assignment ----------------------
    Rule("drift.missing_replica", Severity.ERROR,
         "every assigned replica is on its broker's disk",
         "A broker that exported its state holds data of every inactive chunk it is an ISR "
         "replica of (not being added), and has a log for every active chunk it is a replica of.",
         "broker 2 is a replica of chunk 0 of orders-3 but holds none of it",
         Needs.BROKER_STATES),
    Rule("drift.extra_replica", Severity.WARNING,
         "no broker holds a chunk it is not assigned",
         "A broker holds data of a chunk (or partition) whose replicas, including adding and "
         "removing ones, do not list it: space that retention will not reclaim.",
         "broker 0 still holds offsets 0..99 of orders-3 after the chunk moved to broker 2",
         Needs.BROKER_STATES),
    Rule("drift.beyond_end", Severity.ERROR,
         "no data beyond the end offset",
         "A broker that is not a replica of a partition's active chunk holds no offset past "
         "the EndOffset of the last inactive chunk it is assigned.",
         "broker 1 holds orders-3 up to offset 250 but its last chunk ends at 199",
         Needs.BROKER_STATES),
    Rule("drift.gap", Severity.ERROR,
         "no gap in a chunk's data",
         "An ISR replica of an inactive chunk holds every offset StartOffset..EndOffset that "
         "its log still retains: no missing segment range inside the chunk, and its data "
         "reaches EndOffset.",
         "broker 2 holds chunk 0 of orders-3 only up to offset 80 of 99",
         Needs.BROKER_STATES),
    Rule("drift.config", Severity.WARNING,
         "brokers apply the topic configuration the metadata sets",
         "A broker that exported its state applies to a topic of the snapshot (one it has a "
         "log of or is assigned a replica of) the value the metadata decides for each topic "
         "key it applies: the topic's own key, else the broker's dynamic synonym, else the "
         "cluster default (the snapshot's configs table). A key the metadata sets at none of "
         "these levels is the broker's own static setting to decide and is not checked.",
         "broker 2 applies retention.ms=604800000 (STATIC_BROKER_CONFIG) to orders but the "
         "metadata says 86400000 (DYNAMIC_TOPIC_CONFIG)",
         Needs.BROKER_STATES),
    # --- load ---------------------------------------------------------------------------------
    Rule("load.skew", Severity.WARNING,
         "replicas are spread evenly over brokers",
         "No broker holds more than --max-skew times the mean number of chunk replicas "
         "(partitions' active chunks included) per registered broker; checked once the mean "
         "is at least 10.",
         "broker 4 holds 900 chunk replicas, 3.1x the mean of 290"),
)

RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}
