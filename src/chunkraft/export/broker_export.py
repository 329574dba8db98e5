"""Exports a broker agent's local state (``GET /broker/v1/local-replicas``) as a
``broker-state`` export: the tables of :data:`~chunkraft.export.tables.BROKER_STATE_TABLES`.

``local_replicas`` has one row per chunk the broker's image assigns to it (inactive chunks and
active chunks listing it as a replica) and per chunk it holds data of, ``assigned`` telling
which; an assigned chunk with no data anywhere on the broker gets -1/-1/0. A chunk found in
several logs (the partition's log and a chunk log ``<topic>@<start>``) is one row: the lowest
first offset, the highest last offset and the bytes of both. ``local_configs`` is the answer's
``topic_configs`` as it is (empty from a broker too old to give them).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

from chunkraft.client.command_config import CommandConfig
from chunkraft.export.directory import write_export
from chunkraft.export.download import DownloadError, fetch_json
from chunkraft.export.local_rows import (
    LocalConfigRow,
    LocalLogRow,
    LocalReplicaRow,
    LocalSegmentRow,
    ProducerIdBlockRow,
)
from chunkraft.export.manifest import ExportError, ExportKind, Manifest
from chunkraft.export.tables import BROKER_STATE_TABLES, TABLES_BY_NAME, records_to_table
from chunkraft.records.uuids import parse_kafka_uuid

__all__ = ["broker_state_rows", "cluster_id_text", "export_broker_state"]

LOCAL_REPLICAS_PATH = "/broker/v1/local-replicas"


def _merge(row: LocalReplicaRow, first: int, last: int, size: int) -> LocalReplicaRow:
    if first < 0:
        return row
    low = first if row.first_offset_held < 0 else min(row.first_offset_held, first)
    return row._replace(first_offset_held=low, last_offset_held=max(row.last_offset_held, last),
                        bytes_held=row.bytes_held + size)


def cluster_id_text(value: object) -> str:
    """The cluster id as controller exports write it (``str(uuid)``), whether the broker gave
    that form or Kafka's base64 one; other text as it is."""
    text = str(value or "")
    try:
        return str(uuid.UUID(text))
    except ValueError:
        pass
    try:
        return str(parse_kafka_uuid(text))
    except ValueError:
        return text


def broker_state_rows(answer: dict[str, Any]) -> dict[str, list[Any]]:
    """The rows of each broker-state table, from a ``local-replicas`` answer."""
    broker = int(answer["node_id"])
    logs: list[LocalLogRow] = []
    segments: list[LocalSegmentRow] = []
    replicas: dict[tuple[str, int, int], LocalReplicaRow] = {}
    for entry in answer["partitions"]:
        chunk_log = entry.get("chunk_log")
        topic = chunk_log["topic"] if chunk_log else entry["topic"]
        partition = int(entry["partition"])
        directory = entry.get("directory") or f"{entry['topic']}-{partition}"
        topic_id = entry.get("topic_id") or ""
        logs.append(LocalLogRow(broker, topic, topic_id, partition, directory,
                                entry["log_start_offset"], entry["log_end_offset"],
                                entry["high_watermark"], entry["last_stable_offset"],
                                entry["size_bytes"]))
        for s in entry["segments"]:
            segments.append(LocalSegmentRow(broker, topic, partition, directory, s["base_offset"],
                                            s["next_offset"], s["size_bytes"],
                                            s["max_timestamp"]))
        for c in entry["chunks"]:
            if c["first_offset_held"] < 0:
                continue  # listed for the partition, not held here: only if assigned (below)
            key = (topic, partition, int(c["start_offset"]))
            row = replicas.get(key) or LocalReplicaRow(
                broker, topic, topic_id, partition, key[2], bool(c["active"]), c["stop_offset"],
                c["end_offset"], False, -1, -1, 0)
            replicas[key] = _merge(row, c["first_offset_held"], c["last_offset_held"],
                                   c["bytes_held"])
    for a in answer.get("assigned_chunks", ()):
        key = (a["topic"], int(a["partition"]), int(a["start_offset"]))
        held = replicas.get(key)
        if held is None:
            held = LocalReplicaRow(broker, key[0], a["topic_id"], key[1], key[2],
                                   bool(a["active"]), a["stop_offset"], a["end_offset"],
                                   True, -1, -1, 0)
        replicas[key] = held._replace(assigned=True, topic_id=a["topic_id"] or held.topic_id)
    blocks = [ProducerIdBlockRow(broker, b["broker_epoch"], b["block_start"], b["block_end"])
              for b in answer.get("producer_id_blocks", ())]
    configs = [LocalConfigRow(broker, str(c["topic"]), str(c["name"]), str(c["value"]),
                              str(c["source"]))
               for c in answer.get("topic_configs", ())]
    return {"local_logs": logs, "local_segments": segments,
            "local_replicas": [replicas[k] for k in sorted(replicas)],
            "producer_id_blocks": blocks, "local_configs": configs}


def export_broker_state(bootstrap: str, out: str | os.PathLike[str],
                        config: CommandConfig | None = None, *,
                        timeout: float = 60.0, signing_key: bytes | None = None) -> Manifest:
    """Asks the broker agent at ``bootstrap`` for its state and writes it to the new ``out``
    (its manifest signed with ``signing_key`` if given: :mod:`chunkraft.export.signature`)."""
    if Path(out).exists():
        raise ExportError(f"{out} already exists; an export never overwrites")
    url, answer = fetch_json(bootstrap, LOCAL_REPLICAS_PATH, config, timeout)
    if not isinstance(answer, dict) or "partitions" not in answer or "node_id" not in answer:
        raise DownloadError(f"{url}: not a local-replicas answer")
    if "assigned_chunks" not in answer:
        raise DownloadError(f"{url}: the broker is too old to export its state "
                            "(no assigned_chunks in its answer)")
    try:
        rows = broker_state_rows(answer)
    except (KeyError, TypeError, ValueError) as error:
        raise DownloadError(f"{url}: malformed local-replicas answer: {error!r}") from error
    tables = {name: records_to_table(TABLES_BY_NAME[name], values)
              for name, values in rows.items()}
    manifest = Manifest(
        kind=ExportKind.BROKER_STATE,
        cluster_id=cluster_id_text(answer.get("cluster_id")),
        offset=int(answer["metadata_offset"]),
        epoch=int(answer.get("metadata_epoch", -1)),
        snapshot_time_ms=int(answer.get("time_ms") or time.time() * 1000),
        exported_at_ms=int(time.time() * 1000),
        source=url,
        broker_id=int(answer["node_id"]),
    )
    write_export(out, manifest, tables, BROKER_STATE_TABLES, signing_key)
    return Manifest.read(Path(out))
