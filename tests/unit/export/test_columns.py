"""The bulk column builder gives exactly the table the row-by-row conversion gives."""

from __future__ import annotations

import uuid

import pytest

from chunkraft.export.columns import UuidNames, rows_to_table
from chunkraft.export.tables import CONTROLLER_TABLES, TABLES_BY_NAME, TableSpec, records_to_table
from chunkraft.records import ChunkChangeRecord, PartitionRecord
from tests.unit.export.samples import TOPIC_A, by_type, sample_records


@pytest.mark.parametrize("spec", CONTROLLER_TABLES, ids=lambda s: s.name)
def test_bulk_equals_row_by_row(spec: TableSpec) -> None:
    rows = by_type(sample_records(), spec.row)
    assert rows_to_table(spec, rows).equals(records_to_table(spec, rows))


def test_no_rows_is_an_empty_table_of_the_schema() -> None:
    spec = TABLES_BY_NAME["chunks"]
    table = rows_to_table(spec, [])
    assert table.num_rows == 0 and table.schema == spec.schema


def test_nullable_lists_keep_their_nulls() -> None:
    spec = TABLES_BY_NAME["partitions"]
    rows = [PartitionRecord(partition_id=0, topic_id=TOPIC_A, eligible_leader_replicas=None),
            PartitionRecord(partition_id=1, topic_id=TOPIC_A, eligible_leader_replicas=(1, 2))]
    table = rows_to_table(spec, rows)
    assert table.equals(records_to_table(spec, rows))
    assert table.column("eligible_leader_replicas").to_pylist() == [None, [1, 2]]


def test_uuid_names_are_computed_once_per_uuid() -> None:
    names = UuidNames()
    value = uuid.uuid4()
    assert names[value.int] == str(value)
    assert names[value.int] is names[value.int]
    assert len(names) == 1


def test_records_of_other_tables_are_not_accepted() -> None:
    with pytest.raises(Exception):  # noqa: B017 -- a record of the wrong shape
        rows_to_table(TABLES_BY_NAME["topics"], [ChunkChangeRecord()])
