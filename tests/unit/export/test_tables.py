"""The tables' Arrow schemas are the record declarations: every field, in order, typed per the
table in chunkraft.export.tables, nullable only where the newest version says so."""

from __future__ import annotations

import pyarrow as pa
import pytest

from chunkraft.export.tables import (
    BROKER_STATE_TABLES,
    CONTROLLER_TABLES,
    TABLES_BY_NAME,
    TableSpec,
    declared_fields,
    records_to_table,
    table_to_records,
)
from chunkraft.records.schema import FieldType
from tests.unit.export.samples import by_type, sample_records

EXPECTED_SCALARS = {
    FieldType.BOOL: pa.bool_(), FieldType.INT8: pa.int8(), FieldType.INT16: pa.int16(),
    FieldType.UINT16: pa.int32(), FieldType.INT32: pa.int32(), FieldType.INT64: pa.int64(),
    FieldType.STRING: pa.string(), FieldType.UUID: pa.string(),
}


def expected_type(cls: type, name: str) -> pa.DataType:
    (spec,) = [f for f in declared_fields(cls) if f.name == name]
    if spec.type is FieldType.STRUCT:
        assert spec.struct is not None
        element: pa.DataType = pa.struct(
            [pa.field(f.name, expected_type(spec.struct, f.name), nullable=f.nullable is not None)
             for f in declared_fields(spec.struct)])
    else:
        element = EXPECTED_SCALARS[spec.type]
    return pa.list_(element) if spec.array else element


@pytest.mark.parametrize("spec", CONTROLLER_TABLES + BROKER_STATE_TABLES, ids=lambda s: s.name)
def test_schema_is_the_declaration(spec: TableSpec) -> None:
    schema = spec.schema
    assert schema.names == [f.name for f in declared_fields(spec.row)] == list(spec.columns)
    for field in schema:
        assert field.type == expected_type(spec.row, field.name), field.name
    assert set(spec.key) <= set(schema.names)


def test_the_table_names_are_the_documented_ones() -> None:
    assert [t.name for t in CONTROLLER_TABLES] == [
        "brokers", "topics", "partitions", "chunks", "producer_ids", "acls", "controllers",
        "configs"]
    assert [t.name for t in BROKER_STATE_TABLES] == [
        "local_logs", "local_segments", "local_replicas", "producer_id_blocks",
        "local_configs"]
    assert set(TABLES_BY_NAME) == {t.name for t in CONTROLLER_TABLES + BROKER_STATE_TABLES}


def test_nullable_columns_are_the_nullable_fields() -> None:
    brokers = TABLES_BY_NAME["brokers"].schema
    assert brokers.field("rack").nullable
    assert not brokers.field("broker_id").nullable
    partitions = TABLES_BY_NAME["partitions"].schema
    assert partitions.field("eligible_leader_replicas").nullable
    assert not partitions.field("replicas").nullable


@pytest.mark.parametrize("spec", CONTROLLER_TABLES, ids=lambda s: s.name)
def test_records_round_trip_through_a_table(spec: TableSpec) -> None:
    rows = by_type(sample_records(), spec.row)
    assert rows, "the sample has a row of every table"
    table = records_to_table(spec, rows)
    assert table.schema == spec.schema
    assert table_to_records(spec, table) == rows
