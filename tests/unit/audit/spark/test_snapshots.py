"""The shared audit fixtures themselves: one corruption per rule, and every scenario writes."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from chunkraft.audit.catalog import RULES
from chunkraft.audit.model import VIOLATION_COLUMNS
from tests.support.audit_corruptions import CORRUPTIONS
from tests.support.audit_snapshots import (
    clean_scenario,
    sorted_keys,
    violation_key,
    write_scenario,
)


def test_every_rule_has_exactly_one_corruption() -> None:
    assert list(CORRUPTIONS) == [rule.id for rule in RULES]
    for rule_id, build in CORRUPTIONS.items():
        scenario = build()
        assert scenario.rule_id == rule_id
        assert scenario.expected, f"{rule_id} expects no row"


def test_scenarios_write_complete_exports(tmp_path: Path) -> None:
    inputs = write_scenario(clean_scenario(), tmp_path / "clean")
    assert inputs.previous is not None
    assert [s.manifest.broker_id for s in inputs.broker_states] == [0, 1, 2, 3]
    chunks = pq.read_table(inputs.snapshot.table_path("chunks"))
    assert chunks.num_rows == inputs.snapshot.manifest.tables["chunks"].rows == 11
    replicas = pq.read_table(inputs.broker_states[0].table_path("local_replicas"))
    assert replicas.num_rows > 0
    write_scenario(CORRUPTIONS["drift.gap"](), tmp_path / "gap")


def test_keys_sort_with_nulls_first() -> None:
    row = dict.fromkeys(VIOLATION_COLUMNS)
    row.update(topic_id="t", partition_id=1, broker_id=2)
    assert violation_key(row) == ("t", 1, None, 2)
    assert sorted_keys([("t", 1, None, 2), (None, None, None, 3)]) == [
        (None, None, None, 3), ("t", 1, None, 2)]
