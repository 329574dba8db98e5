"""Chunk coverage per partition: chunks.* rules, as windows of lag 1 over sorted chunks."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import array, indices_where, shifted
from chunkraft.audit.arrow.found import Found, found
from chunkraft.audit.arrow.read import Snapshot

__all__ = ["chunk_rules", "last_chunks"]


def last_chunks(snap: Snapshot) -> tuple[pa.Array, pa.Array]:
    """Per partition row: the index (in the sorted chunks) of its last inactive chunk, or null;
    and a mask of the partitions that have one."""
    pkey = snap.chunks["pkey"]
    n = len(pkey)
    if n == 0:
        nulls = pa.nulls(snap.partitions.num_rows, pa.int64())
        return nulls, pc.is_valid(nulls)
    prev, cur = shifted(array(pkey))
    is_last = pa.concat_arrays([array(pc.not_equal(prev, cur)), pa.array([True])])
    last = indices_where(is_last)
    at = pc.index_in(snap.partitions["pkey"], value_set=array(pkey).take(last))
    index = pc.cast(last.take(at), pa.int64())
    return index, pc.is_valid(index)


def chunk_rules(snap: Snapshot) -> list[Found]:
    c = snap.chunks
    start, stop, end, ts = (array(c[n]) for n in
                            ("start_offset", "stop_offset", "end_offset", "start_timestamp"))
    out: list[Found] = []

    bad = indices_where(pc.or_(pc.greater(start, stop), pc.greater(stop, end)))
    out.append(found(
        "chunks.offsets_ordered", len(bad), _ordered_detail, tcode=c["tcode"].take(bad),
        partition_id=c["partition_id"].take(bad), start_offset=start.take(bad),
        stop=stop.take(bad), end=end.take(bad)))

    chunk_epoch, epoch = array(c["chunk_epoch"]), array(c["epoch"])
    bad = indices_where(pc.not_equal(chunk_epoch, epoch))
    out.append(found(
        "chunks.epoch", len(bad), _epoch_detail, tcode=c["tcode"].take(bad),
        partition_id=c["partition_id"].take(bad), start_offset=start.take(bad),
        chunk_epoch=chunk_epoch.take(bad), epoch=epoch.take(bad)))

    # windows: pair i is (row i, row i + 1) of the sorted chunks, within one partition
    p_key, n_key = shifted(array(c["pkey"]))
    same = pc.equal(p_key, n_key)
    p_start, n_start = shifted(start)
    p_stop, _ = shifted(stop)
    p_end, n_end = shifted(end)
    p_ts, n_ts = shifted(ts)

    def later(rule: str, mask: Any, detail: Any, **extra: Any) -> Found:
        pairs = indices_where(pc.and_(same, mask))
        rows = pc.add(pairs, 1)
        return found(rule, len(pairs), detail, tcode=c["tcode"].take(rows),
                     partition_id=c["partition_id"].take(rows), start_offset=start.take(rows),
                     **{k: v.take(pairs) for k, v in extra.items()})

    out.append(later("chunks.contiguous", pc.not_equal(n_start, pc.add(p_stop, 1)),
                     _contiguous_detail, prev_start=p_start, prev_stop=p_stop))
    out.append(later("chunks.overlap", pc.less(n_end, p_end), _overlap_detail,
                     end=n_end, prev_start=p_start, prev_end=p_end))
    known = pc.and_(pc.greater_equal(p_ts, 0), pc.greater_equal(n_ts, 0))  # -1: unknown
    inactive_ts = later("chunks.timestamps", pc.and_(known, pc.less(n_ts, p_ts)),
                        _timestamp_detail, ts=n_ts, prev_start=p_start, prev_ts=p_ts,
                        is_active=pa.repeat(False, len(n_ts)))

    # the active chunk against the last inactive one
    p = snap.partitions
    last, has = last_chunks(snap)
    with_chunks = indices_where(has)
    last = last.take(with_chunks)
    a_start = p["start_offset"].take(with_chunks)
    a_ts = p["start_timestamp"].take(with_chunks)
    l_start, l_stop, l_ts = start.take(last), stop.take(last), ts.take(last)

    def active(rule: str, mask: Any, detail: Any, **extra: Any) -> Found:
        hit = indices_where(mask)
        rows = with_chunks.take(hit)
        return found(rule, len(hit), detail, tcode=p["tcode"].take(rows),
                     partition_id=p["partition_id"].take(rows),
                     start_offset=a_start.take(hit), **{k: v.take(hit) for k, v in extra.items()})

    out.append(active("chunks.active_start", pc.not_equal(a_start, pc.add(l_stop, 1)),
                      _active_detail, prev_start=l_start, prev_stop=l_stop))
    known = pc.and_(pc.greater_equal(a_ts, 0), pc.greater_equal(l_ts, 0))
    active_ts = active("chunks.timestamps", pc.and_(known, pc.less(a_ts, l_ts)),
                       _timestamp_detail, ts=a_ts, prev_start=l_start, prev_ts=l_ts,
                       is_active=pa.repeat(True, len(a_ts)))
    out.append(Found("chunks.timestamps",
                     pa.concat_tables([inactive_ts.rows, active_ts.rows]), _timestamp_detail))
    return out


def _ordered_detail(r: dict[str, Any]) -> str:
    return (f"start {r['start_offset']}, stop {r['stop']}, end {r['end']}: "
            "not start <= stop <= end")


def _epoch_detail(r: dict[str, Any]) -> str:
    return f"ChunkEpoch {r['chunk_epoch']} but Epoch {r['epoch']}: they must be equal"


def _contiguous_detail(r: dict[str, Any]) -> str:
    return (f"starts at {r['start_offset']} but the previous chunk stops at {r['prev_stop']} "
            f"(expected {r['prev_stop'] + 1})")


def _overlap_detail(r: dict[str, Any]) -> str:
    return f"ends at {r['end']} but the previous chunk ends later, at {r['prev_end']}"


def _active_detail(r: dict[str, Any]) -> str:
    return (f"the active chunk starts at {r['start_offset']} but the last inactive chunk "
            f"stops at {r['prev_stop']} (expected {r['prev_stop'] + 1})")


def _timestamp_detail(r: dict[str, Any]) -> str:
    if r["is_active"]:
        return (f"the active chunk's StartTimestamp {r['ts']} is before the last inactive "
                f"chunk's {r['prev_ts']}")
    return f"StartTimestamp {r['ts']} is before the previous chunk's {r['prev_ts']}"
