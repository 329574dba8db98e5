"""Reads export directories into Arrow tables with the integer keys the rules join on.

Topic ids are strings; the engine maps every topic id it meets (in the audited snapshot and the
previous one) to a small integer code, so a partition is one int64 key (code * 2^32 +
partition id) and joins are hash lookups on integers. Chunks are sorted once by (partition,
start offset): the window checks then compare neighbouring rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from chunkraft.audit.arrow.columns import Slots, array, partition_key
from chunkraft.audit.inputs import AuditInputs, ExportInput
from chunkraft.export.tables import TABLES_BY_NAME
from chunkraft.export.verify import ExportIntegrityError

__all__ = ["BrokerStates", "Snapshot", "Topics", "read_inputs", "read_table"]

_CHUNK_COLUMNS = ("topic_id", "partition_id", "start_offset", "start_timestamp", "stop_offset",
                  "end_offset", "chunk_epoch", "epoch", "replicas", "isr", "removing_replicas",
                  "adding_replicas")
_PARTITION_COLUMNS = ("topic_id", "partition_id", "replicas", "isr", "removing_replicas",
                      "adding_replicas", "leader", "start_offset", "start_timestamp",
                      "prior_partition_epochs")


def read_table(export: ExportInput, name: str, columns: tuple[str, ...] | None = None,
               dictionary: tuple[str, ...] = ()) -> pa.Table:
    """Table ``name`` of an export (its files as the manifest lists them), empty if absent.

    Columns named in ``dictionary`` stay dictionary-encoded as Parquet stores them (a topic
    id repeated over millions of chunks costs an index, not 36 characters); the others are
    cast to the declared schema.
    """
    schema = TABLES_BY_NAME[name].schema
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    entry = export.manifest.tables.get(name)
    if entry is None or not entry.files:
        table = schema.empty_table()
        parts = [table]
    else:
        parts = [_read_file(export.path / f, schema, dictionary) for f in entry.files]
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def _read_file(path: Path, schema: pa.Schema, dictionary: tuple[str, ...]) -> pa.Table:
    """One listed file with the declared types; a file that cannot be decoded or cast raises
    ExportIntegrityError naming it (the job's exit 2), as the Spark engine does."""
    target = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type), f.nullable)
                        if f.name in dictionary else f for f in schema])
    try:
        part = pq.read_table(path, columns=list(schema.names),
                             read_dictionary=list(dictionary) or None)
        return part if part.schema == target else part.cast(target)
    except (pa.ArrowException, OSError, ValueError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ExportIntegrityError(f"cannot read {path}: {first}") from None


@dataclass(frozen=True)
class Topics:
    """Topic id <-> code: ``ids[code]`` is the id, ``names[code]`` its name (the smallest name
    among topics rows with that id) or null when no topics row has it."""

    ids: pa.Array
    names: pa.Array

    def code_of(self, topic_ids: Any) -> pa.Array:
        """The code of each topic id (null if unknown); dictionary arrays are looked up by
        their dictionary, then expanded through their indices."""
        if isinstance(topic_ids, pa.ChunkedArray):
            if not pa.types.is_dictionary(topic_ids.type):
                topic_ids = array(topic_ids)
            else:
                parts = [self.code_of(chunk) for chunk in topic_ids.chunks]
                return (pa.concat_arrays(parts) if parts else pa.array([], pa.int64()))
        if pa.types.is_dictionary(topic_ids.type):
            codes = pc.cast(pc.index_in(topic_ids.dictionary, value_set=self.ids), pa.int64())
            return array(codes.take(topic_ids.indices))
        return array(pc.cast(pc.index_in(topic_ids, value_set=self.ids), pa.int64()))


@dataclass
class Snapshot:
    """One controller snapshot's tables, keyed by topic code (see the module docstring).

    ``chunks`` is sorted by (``pkey``, ``start_offset``); ``chunk_partition`` is, per chunk, the
    row of its partition in ``partitions`` (null if none).
    """

    export: ExportInput
    brokers: pa.Table
    topics: pa.Table          # + tcode
    partitions: pa.Table      # + tcode, pkey
    chunks: pa.Table          # + tcode, pkey, sorted
    producer_ids: pa.Table
    chunk_partition: pa.Array
    p_replicas: Slots
    p_isr: Slots
    p_adding: Slots
    p_removing: Slots
    c_replicas: Slots
    c_isr: Slots
    c_adding: Slots
    c_removing: Slots
    cache: dict[str, Any] = field(default_factory=dict)  # derived arrays several parts use

    @property
    def time_ms(self) -> int:
        return self.export.manifest.snapshot_time_ms


@dataclass
class BrokerStates:
    """The brokers' state exports, concatenated; ``ids`` are the brokers that exported."""

    ids: list[int]
    replicas: pa.Table
    logs: pa.Table
    segments: pa.Table
    blocks: pa.Table
    configs: pa.Table  # local_configs: empty from exports written before it


def _raw(export: ExportInput) -> dict[str, pa.Table]:
    return {
        "brokers": read_table(export, "brokers", ("broker_id", "broker_epoch", "rack", "fenced")),
        "topics": read_table(export, "topics"),
        "partitions": read_table(export, "partitions", _PARTITION_COLUMNS, ("topic_id",)),
        "chunks": read_table(export, "chunks", _CHUNK_COLUMNS, ("topic_id",)),
        "producer_ids": read_table(export, "producer_ids"),
    }


def _keyed(export: ExportInput, raw: dict[str, pa.Table], topics: Topics) -> Snapshot:
    t = raw["topics"]
    t = t.append_column("tcode", topics.code_of(t["topic_id"]))
    p = raw["partitions"]
    p_code = topics.code_of(p["topic_id"])
    p = p.append_column("tcode", p_code).append_column(
        "pkey", partition_key(p_code, p["partition_id"]))
    c = raw["chunks"].drop_columns(["topic_id"])  # the code replaces it
    c_code = topics.code_of(raw["chunks"]["topic_id"])
    c = c.append_column("tcode", c_code).append_column(
        "pkey", partition_key(c_code, c["partition_id"]))
    c = c.combine_chunks()
    if not _in_order(c):  # exports keep the snapshot's order, usually already sorted
        order = pc.sort_indices(c, sort_keys=[("pkey", "ascending"),
                                              ("start_offset", "ascending")])
        c = pa.table({name: array(c[name]).take(order) for name in c.column_names})
    p = p.drop_columns(["topic_id"]).combine_chunks()
    where = array(pc.index_in(c["pkey"], value_set=array(p["pkey"])))
    return Snapshot(
        export=export, brokers=raw["brokers"].combine_chunks(), topics=t.combine_chunks(),
        partitions=p, chunks=c, producer_ids=raw["producer_ids"], chunk_partition=where,
        p_replicas=Slots(p["replicas"]), p_isr=Slots(p["isr"]),
        p_adding=Slots(p["adding_replicas"]), p_removing=Slots(p["removing_replicas"]),
        c_replicas=Slots(c["replicas"]), c_isr=Slots(c["isr"]),
        c_adding=Slots(c["adding_replicas"]), c_removing=Slots(c["removing_replicas"]),
    )


def _in_order(chunks: pa.Table) -> bool:
    """The chunks are sorted by (pkey, start_offset), strictly."""
    n = chunks.num_rows
    if n < 2:
        return True
    key, start = array(chunks["pkey"]), array(chunks["start_offset"])
    k0, k1 = key.slice(0, n - 1), key.slice(1)
    later = pc.or_(pc.greater(k1, k0),
                   pc.and_(pc.equal(k1, k0), pc.greater(start.slice(1), start.slice(0, n - 1))))
    return bool(pc.all(pc.fill_null(later, False)).as_py())


def _topics(raws: list[dict[str, pa.Table]]) -> Topics:
    def distinct(column: pa.ChunkedArray) -> list[pa.Array]:
        if pa.types.is_dictionary(column.type):
            return [array(pc.unique(chunk.dictionary)) for chunk in column.chunks]
        return [array(pc.unique(column))] if len(column) else []

    ids = pa.chunked_array(
        [chunk for raw in raws for name in ("topics", "partitions", "chunks")
         for chunk in distinct(raw[name]["topic_id"])], pa.string())
    universe = array(pc.unique(ids)) if len(ids) else pa.array([], pa.string())
    # one name per id: the smallest of the current snapshot's topics rows with that id
    first = raws[0]["topics"]
    names = pa.nulls(len(universe), pa.string())
    if first.num_rows:
        grouped = first.group_by("topic_id", use_threads=False).aggregate([("name", "min")])
        at = pc.index_in(universe, value_set=array(grouped["topic_id"]))
        names = array(grouped["name_min"]).take(at)
    return Topics(universe, names)


def read_inputs(inputs: AuditInputs) -> tuple[Topics, Snapshot, Snapshot | None,
                                             BrokerStates | None]:
    """Every input of an audit, read and keyed."""
    raws = [_raw(inputs.snapshot)] + ([_raw(inputs.previous)] if inputs.previous else [])
    topics = _topics(raws)
    current = _keyed(inputs.snapshot, raws[0], topics)
    previous = _keyed(inputs.previous, raws[1], topics) if inputs.previous else None
    states = None
    if inputs.broker_states:
        def concat(name: str) -> pa.Table:
            tables = [read_table(s, name) for s in inputs.broker_states]
            return pa.concat_tables(tables).combine_chunks()
        states = BrokerStates(
            ids=sorted(s.manifest.broker_id for s in inputs.broker_states
                       if s.manifest.broker_id is not None),
            replicas=concat("local_replicas"), logs=concat("local_logs"),
            segments=concat("local_segments"), blocks=concat("producer_id_blocks"),
            configs=concat("local_configs"))
    return topics, current, previous, states
