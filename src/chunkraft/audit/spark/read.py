"""Reading export directories into DataFrames, always with the declared schema."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, SparkSession

from chunkraft.audit.inputs import AuditInputs, ExportInput
from chunkraft.audit.spark.literal import literal_frame
from chunkraft.audit.spark.schemas import spark_schema
from chunkraft.export.tables import BROKER_STATE_TABLES

__all__ = ["SnapshotFrames", "read_snapshot", "read_states", "read_table"]


def read_table(spark: SparkSession, export: ExportInput, table: str) -> DataFrame:
    """One table of an export, with its declared schema (no inference pass): exactly the files
    its manifest lists (a file added to the table's directory is not read), or an empty frame
    if the manifest has no such table."""
    files = export.table_files(table)
    if not files:
        return literal_frame(spark, [], spark_schema(table))
    return spark.read.schema(spark_schema(table)).parquet(*(str(f) for f in files))


@dataclass(frozen=True)
class SnapshotFrames:
    """The tables of one controller snapshot."""

    brokers: DataFrame
    topics: DataFrame
    partitions: DataFrame
    chunks: DataFrame
    producer_ids: DataFrame
    acls: DataFrame


def read_snapshot(spark: SparkSession, export: ExportInput) -> SnapshotFrames:
    """The tables of a controller-snapshot export that the rules read (not every table of the
    export: ``controllers`` and ``configs`` are exported for data engineers, and an export
    written before they existed is still audited)."""
    frames = {field.name: read_table(spark, export, field.name)
              for field in dataclasses.fields(SnapshotFrames)}
    return SnapshotFrames(**frames)


def read_states(spark: SparkSession, inputs: AuditInputs) -> dict[str, DataFrame]:
    """Each broker-state table, unioned over every broker's export (empty without any)."""
    frames: dict[str, DataFrame] = {}
    for spec in BROKER_STATE_TABLES:
        # a table newer than an export (local_configs) is read as empty there
        parts = [read_table(spark, state, spec.name) for state in inputs.broker_states]
        frames[spec.name] = (reduce(DataFrame.unionByName, parts) if parts
                             else literal_frame(spark, [], spark_schema(spec.name)))
    return frames
