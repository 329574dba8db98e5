"""What an audit finds, as plain values: the engines fill it, the report writers read it.

:class:`AuditReport` is exactly what ``report.json`` holds (``to_json``); ``docs/audit.md``
documents every field. Nothing here imports Spark or pyarrow. Samples are lists of JSON-ready
dicts whose keys are :data:`VIOLATION_COLUMNS` (values null where a column does not apply).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from chunkraft.audit.catalog import RULES_BY_ID, Severity

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "VIOLATION_COLUMNS",
    "AuditReport",
    "BrokerLoad",
    "DiffSummary",
    "ExportSummary",
    "LoadSummary",
    "PartitionHeat",
    "RackLoad",
    "RuleResult",
    "Timeline",
    "TimelineChunk",
]

REPORT_SCHEMA_VERSION = 1

VIOLATION_COLUMNS: tuple[str, ...] = (
    "rule_id",       # the rule that fired
    "topic_id",      # string uuid, or null
    "topic",         # topic name (joined from topics), or null
    "partition_id",  # int, or null
    "start_offset",  # the chunk's StartOffset (the active chunk's for a partition), or null
    "broker_id",     # the broker concerned, or null
    "detail",        # one line saying what is wrong, with the numbers
)
"""The columns every engine's violations have, in this order; a sample row has these keys."""


@dataclass(frozen=True)
class RuleResult:
    """One rule's outcome: how many rows violate it and a bounded sample of them.

    ``skipped`` names the missing input (e.g. ``"needs --previous"``) when the rule could not
    run; then ``count`` is 0 and ``sample`` empty.
    """

    rule_id: str
    count: int
    sample: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None

    @property
    def severity(self) -> Severity:
        return RULES_BY_ID[self.rule_id].severity

    @property
    def fired(self) -> bool:
        return self.count > 0


@dataclass(frozen=True)
class ExportSummary:
    """The manifest of one input directory, as the report shows it."""

    path: str
    kind: str
    cluster_id: str
    offset: int
    epoch: int
    snapshot_time_ms: int
    rows: dict[str, int]
    broker_id: int | None = None


@dataclass(frozen=True)
class BrokerLoad:
    """One registered broker's share: replicas by kind, leaderships, offsets and bytes.

    ``offsets`` counts the offsets of the inactive chunks it is a replica of (EndOffset -
    StartOffset + 1); ``bytes`` is from its state export, null without one.
    """

    broker_id: int
    rack: str | None
    fenced: bool
    partition_replicas: int
    chunk_replicas: int
    leaders: int
    offsets: int
    bytes: int | None = None


@dataclass(frozen=True)
class RackLoad:
    """The sum of :class:`BrokerLoad` over a rack (null rack: ``rack`` is None)."""

    rack: str | None
    brokers: int
    partition_replicas: int
    chunk_replicas: int
    offsets: int
    bytes: int | None = None


@dataclass(frozen=True)
class PartitionHeat:
    """A partition among the hottest: by offsets held in its chunks, then bytes if known."""

    topic: str
    topic_id: str
    partition_id: int
    chunks: int
    offsets: int
    bytes: int | None = None


@dataclass(frozen=True)
class LoadSummary:
    """Load per broker and rack, skew (max / mean over brokers) per measure, hottest partitions.

    ``skew`` maps ``chunk_replicas``, ``partition_replicas``, ``leaders``, ``offsets`` (and
    ``bytes`` when known) to max / mean, or null when the mean is 0.
    """

    brokers: list[BrokerLoad]
    racks: list[RackLoad]
    skew: dict[str, float | None]
    hottest: list[PartitionHeat]


@dataclass(frozen=True)
class DiffSummary:
    """Two snapshots compared: counts per change and a bounded sample of each.

    Keys of ``counts`` and ``samples``: ``topics_created``, ``topics_removed``,
    ``partitions_created``, ``partitions_removed``, ``partitions_moved`` (replicas changed),
    ``chunks_created``, ``chunks_removed``, ``chunks_moved``. A sample row has ``topic``,
    ``topic_id``, ``partition_id``, ``start_offset`` (chunks), ``replicas_before`` and
    ``replicas_after`` (null where not applicable).
    """

    previous: ExportSummary
    counts: dict[str, int]
    samples: dict[str, list[dict[str, Any]]]


@dataclass(frozen=True)
class TimelineChunk:
    """One chunk on a partition's timeline (the active one has stop and end -1)."""

    start_offset: int
    stop_offset: int
    end_offset: int
    start_timestamp: int
    replicas: list[int]
    active: bool


@dataclass(frozen=True)
class Timeline:
    """A partition's chunks in offset order: the KIP's table of offset ranges per broker."""

    topic: str
    topic_id: str
    partition_id: int
    chunks: list[TimelineChunk]
    why: str  # "violation" or "hottest"


@dataclass(frozen=True)
class AuditReport:
    """Everything one audit run found; ``to_json()`` is ``report.json``."""

    generated_at_ms: int
    engine: str  # "spark" or "arrow"
    snapshot: ExportSummary
    broker_states: list[ExportSummary]
    rules: list[RuleResult]
    load: LoadSummary
    timelines: list[Timeline]
    diff: DiffSummary | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)  # inputs' unlisted files, old manifests
    fail_on: Severity = Severity.WARNING  # the job's --fail-on: what status and exit code count
    schema_version: int = REPORT_SCHEMA_VERSION

    def violations(self, at_least: Severity = Severity.WARNING) -> int:
        """Violating rows of rules at least this severe."""
        return sum(r.count for r in self.rules if r.severity.rank >= at_least.rank)

    def exit_code(self, fail_on: Severity | None = None) -> int:
        """0 when no rule at least ``fail_on`` (default: the report's) fired, else 1 (2 is for
        job errors)."""
        return 1 if self.violations(fail_on or self.fail_on) > 0 else 0

    def below_fail_on(self) -> list[RuleResult]:
        """Rules that fired but are less severe than ``fail_on``: found, not failing."""
        return [r for r in self.rules if r.fired and r.severity.rank < self.fail_on.rank]

    def decision(self) -> str:
        """One sentence: what decided the exit status (``report.json``'s ``decided_by``)."""
        failing = [r for r in self.rules if r.fired and r.severity.rank >= self.fail_on.rank]
        below = self.below_fail_on()
        if failing:
            names = ", ".join(f"{r.rule_id} ({r.count:,})" for r in failing)
            return (f"exit 1: {len(failing)} rule{'s' if len(failing) > 1 else ''} of severity "
                    f"{self.fail_on.value} or above fired: {names} (--fail-on "
                    f"{self.fail_on.value})")
        if below:
            names = ", ".join(f"{r.rule_id} ({r.count:,}, {r.severity.value})" for r in below)
            return (f"exit 0: only rules below --fail-on {self.fail_on.value} fired: {names}; "
                    "they are reported but do not fail the audit")
        return f"exit 0: no rule fired (--fail-on {self.fail_on.value})"

    def to_json(self) -> dict[str, Any]:
        value = asdict(self)
        for rule, result in zip(value["rules"], self.rules, strict=True):
            rule["severity"] = result.severity.value
            rule["title"] = RULES_BY_ID[result.rule_id].title
        value["fail_on"] = self.fail_on.value
        value["status"] = "violations" if self.exit_code() else "clean"
        value["exit_code"] = self.exit_code()
        value["decided_by"] = self.decision()
        return value
