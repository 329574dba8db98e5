"""The tables of a columnar export and their Arrow schemas, derived from the declarations.

A controller snapshot exports one table per kind of record in the image (``brokers``,
``topics``, ``partitions``, ``chunks``, ``producer_ids``, ``acls``); a broker exports its disk
(``local_logs``, ``local_segments``, ``local_replicas``, ``producer_id_blocks``) and the topic
configuration it applies (``local_configs``). Every column
is one field of the declared NamedTuple, named as the Python field (``topic_id``), in
declaration order, for the newest version of the record; its type follows from the FieldSpec:

| declared | Arrow / Parquet | why |
|---|---|---|
| bool, int8, int16, int32, int64 | the same | |
| uint16 | int32 | Spark has no unsigned types |
| string | string | |
| uuid | string (36 characters, lowercase) | readable in reports and joins in Spark |
| []T | list<T> | |
| []Struct | list<struct<...>> | the struct's own fields, recursively |

A field is non-nullable unless its newest version declares it nullable. The Spark schemas in
``chunkraft.audit`` are derived from these, so the two can never disagree.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from chunkraft.export.local_rows import (
    LocalConfigRow,
    LocalLogRow,
    LocalReplicaRow,
    LocalSegmentRow,
    ProducerIdBlockRow,
)
from chunkraft.records import (
    AccessControlEntryRecord,
    ChunkRecord,
    ConfigRecord,
    ControllerRegistrationRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from chunkraft.records.schema import FieldSpec, FieldType, RecordSchema, schema_of

__all__ = [
    "BROKER_STATE_TABLES",
    "CONTROLLER_TABLES",
    "TABLES_BY_NAME",
    "TableSpec",
    "arrow_type",
    "declared_fields",
    "records_to_table",
    "table_to_records",
]

_SCALARS: dict[FieldType, pa.DataType] = {
    FieldType.BOOL: pa.bool_(),
    FieldType.INT8: pa.int8(),
    FieldType.INT16: pa.int16(),
    FieldType.UINT16: pa.int32(),
    FieldType.INT32: pa.int32(),
    FieldType.INT64: pa.int64(),
    FieldType.STRING: pa.string(),
    FieldType.UUID: pa.string(),
}


def declared_fields(cls: type) -> tuple[FieldSpec, ...]:
    """The fields of ``cls`` in its newest version (every field, for a struct)."""
    schema = schema_of(cls)
    if isinstance(schema, RecordSchema):
        return schema.fields_in(schema.versions[-1])
    return schema.fields


def _nullable(spec: FieldSpec, cls: type) -> bool:
    if spec.nullable is None:
        return False
    schema = schema_of(cls)
    return spec.nullable_in(schema.versions[-1]) if isinstance(schema, RecordSchema) else True


def arrow_type(spec: FieldSpec) -> pa.DataType:
    """The Arrow type of one declared field (see the module's table)."""
    if spec.type is FieldType.STRUCT:
        assert spec.struct is not None
        element: pa.DataType = pa.struct(_arrow_fields(spec.struct))
    else:
        element = _SCALARS[spec.type]
    return pa.list_(element) if spec.array else element


def _arrow_fields(cls: type) -> list[pa.Field]:
    return [pa.field(spec.name, arrow_type(spec), nullable=_nullable(spec, cls))
            for spec in declared_fields(cls)]


@dataclass(frozen=True)
class TableSpec:
    """One exported table: its name, the declared row class and the columns that key a row.

    ``schema`` is the Arrow schema derived from the declaration; the rows of the table are
    exactly the instances of ``row`` (records for a controller snapshot).
    """

    name: str
    row: type
    key: tuple[str, ...]
    about: str

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(_arrow_fields(self.row))

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in declared_fields(self.row))


CONTROLLER_TABLES: tuple[TableSpec, ...] = (
    TableSpec("brokers", RegisterBrokerRecord, ("broker_id",),
              "Every broker registration (RegisterBrokerRecord, as changed since)."),
    TableSpec("topics", TopicRecord, ("topic_id",), "Every topic (TopicRecord)."),
    TableSpec("partitions", PartitionRecord, ("topic_id", "partition_id"),
              "Every partition and its active chunk (PartitionRecord)."),
    TableSpec("chunks", ChunkRecord, ("topic_id", "partition_id", "start_offset"),
              "Every inactive chunk (ChunkRecord, as changed by ChunkChangeRecords)."),
    TableSpec("producer_ids", ProducerIdsRecord, ("next_producer_id",),
              "The last producer id block allocated (ProducerIdsRecord)."),
    TableSpec("acls", AccessControlEntryRecord, ("id",),
              "Every ACL binding (AccessControlEntryRecord)."),
    TableSpec("controllers", ControllerRegistrationRecord, ("controller_id",),
              "Every controller registration (ControllerRegistrationRecord): the controllers "
              "added while the quorum served."),
    TableSpec("configs", ConfigRecord, ("resource_type", "resource_name", "name"),
              "Every configuration key set in the metadata log (ConfigRecord): resource type 2 "
              "a topic, 4 a broker (an empty name: the cluster default)."),
)

BROKER_STATE_TABLES: tuple[TableSpec, ...] = (
    TableSpec("local_logs", LocalLogRow, ("broker_id", "directory"),
              "Every log directory on the broker's disk."),
    TableSpec("local_segments", LocalSegmentRow, ("broker_id", "directory", "base_offset"),
              "Every segment of those logs."),
    TableSpec("local_replicas", LocalReplicaRow,
              ("broker_id", "topic", "partition_id", "chunk_start_offset"),
              "What the broker holds of each chunk assigned to it or found on its disk."),
    TableSpec("producer_id_blocks", ProducerIdBlockRow, ("broker_id", "block_start"),
              "The producer id blocks the broker hands out from."),
    TableSpec("local_configs", LocalConfigRow, ("broker_id", "topic", "name"),
              "The value of each topic key the broker applies, per topic it has a log of or "
              "is assigned a replica of, with its source."),
)

TABLES_BY_NAME: dict[str, TableSpec] = {t.name: t for t in CONTROLLER_TABLES + BROKER_STATE_TABLES}


def _to_arrow_value(spec: FieldSpec, value: Any) -> Any:
    if value is None:
        return None
    if spec.array:
        if spec.type is FieldType.STRUCT:
            assert spec.struct is not None
            struct_fields = declared_fields(spec.struct)
            return [{f.name: _to_arrow_value(f, getattr(item, f.name)) for f in struct_fields}
                    for item in value]
        if spec.type is FieldType.UUID:
            return [str(item) for item in value]
        return list(value)
    if spec.type is FieldType.UUID:
        return str(value)
    return value


def _from_arrow_value(spec: FieldSpec, value: Any) -> Any:
    if value is None:
        return None
    if spec.array:
        if spec.type is FieldType.STRUCT:
            assert spec.struct is not None
            struct_fields = declared_fields(spec.struct)
            return tuple(spec.struct(**{f.name: _from_arrow_value(f, item[f.name])
                                        for f in struct_fields}) for item in value)
        if spec.type is FieldType.UUID:
            return tuple(uuid.UUID(item) for item in value)
        return tuple(value)
    if spec.type is FieldType.UUID:
        return uuid.UUID(value)
    return value


def records_to_table(spec: TableSpec, rows: Iterable[Any]) -> pa.Table:
    """The rows (instances of ``spec.row``) as an Arrow table of ``spec.schema``.

    A straightforward conversion for tests and small exports; the snapshot exporter builds its
    columns in bulk instead.
    """
    fields = declared_fields(spec.row)
    columns: dict[str, list[Any]] = {f.name: [] for f in fields}
    for row in rows:
        for f in fields:
            columns[f.name].append(_to_arrow_value(f, getattr(row, f.name)))
    return pa.Table.from_pydict(columns, schema=spec.schema)


def table_to_records(spec: TableSpec, table: pa.Table) -> list[Any]:
    """The inverse of :func:`records_to_table`: the rows of ``table`` as ``spec.row`` values.

    Fields of older versions that the table does not carry keep their declared defaults.
    """
    fields = declared_fields(spec.row)
    return [spec.row(**{f.name: _from_arrow_value(f, item[f.name]) for f in fields})
            for item in table.select([f.name for f in fields]).to_pylist()]
