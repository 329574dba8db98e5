"""local_changes restated over whole images: the reference the delta-based code must agree with.

It compares every partition of the old and new image for one broker, following the rules of
docs/image.md, independently of the delta machinery.
"""

from __future__ import annotations

from typing import Any

from chunkraft.controller.image import MetadataImage
from chunkraft.records import ChunkRecord, PartitionRecord


def _state(
    image: MetadataImage, topic_id: Any, partition_id: int
) -> tuple[str | None, PartitionRecord | None, dict[int, ChunkRecord]]:
    topic = image.topics.get(topic_id)
    if topic is None:
        return None, None, {}
    chunks = {c.start_offset: c for c in topic.chunks_of(partition_id)}
    return topic.name, topic.partition(partition_id), chunks


def _hosts(b: int, active: PartitionRecord | None, chunks: dict[int, ChunkRecord]) -> bool:
    return (active is not None and b in active.replicas) or any(
        b in c.replicas for c in chunks.values()
    )


def brute_force_local_changes(old: MetadataImage, new: MetadataImage, b: int) -> dict[str, Any]:
    """The expected local changes as plain dicts keyed like LocalReplicaChanges' maps."""
    out: dict[str, dict[Any, Any]] = {
        k: {}
        for k in ("deletes", "leaders", "elected_leaders", "followers", "chunk_stops",
                  "chunk_creates", "chunk_deletes")
    }
    keys = set()
    for image in (old, new):
        for topic in image.topics.by_id.values():
            keys.update((topic.topic_id, p) for p in topic.partitions)
    for topic_id, pid in keys:
        old_name, old_p, old_c = _state(old, topic_id, pid)
        new_name, new_p, new_c = _state(new, topic_id, pid)
        name = new_name or old_name
        if not _hosts(b, new_p, new_c):
            if _hosts(b, old_p, old_c):
                out["deletes"][(topic_id, pid)] = name
            continue
        if new_p is not None and (old_p is None or old_p.partition_epoch != new_p.partition_epoch):
            if new_p.leader == b:
                out["leaders"][(topic_id, pid)] = (name, new_p)
                if old_p is None or old_p.leader_epoch != new_p.leader_epoch:
                    out["elected_leaders"][(topic_id, pid)] = (name, new_p)
            elif b in new_p.replicas:
                out["followers"][(topic_id, pid)] = (name, new_p)
        was_active = old_p is not None and b in old_p.replicas
        for start, chunk in new_c.items():
            if b not in chunk.replicas:
                continue
            before = old_c.get(start)
            key = (topic_id, pid, start)
            created = (name, start, chunk.end_offset,
                       tuple(x for x in chunk.isr if x != b), False)
            if before is None:
                if was_active and old_p is not None and start >= old_p.start_offset:
                    out["chunk_stops"][key] = chunk
                else:
                    out["chunk_creates"][key] = created
            elif b not in before.replicas:
                out["chunk_creates"][key] = created
        for start, chunk in old_c.items():
            after = new_c.get(start)
            if b in chunk.replicas and (after is None or b not in after.replicas):
                out["chunk_deletes"][(topic_id, pid, start)] = (name, start, chunk.end_offset,
                                                               False)
        if old_p is None or new_p is None:
            continue
        cut = old_p.start_offset != new_p.start_offset
        now_active = b in new_p.replicas
        if cut and now_active and not was_active:
            earlier = [c for s, c in sorted(new_c.items()) if s < new_p.start_offset]
            previous = earlier[-1] if earlier else None
            end = previous.end_offset if previous else new_p.start_offset - 1
            sources = tuple(x for x in previous.isr if x != b) if previous else ()
            out["chunk_creates"][(topic_id, pid, new_p.start_offset)] = (
                name, new_p.start_offset, end, sources, True)
        elif not cut and was_active and not now_active:
            out["chunk_deletes"][(topic_id, pid, old_p.start_offset)] = (
                name, old_p.start_offset, -1, True)
    return out


def as_plain(changes: Any) -> dict[str, Any]:
    """LocalReplicaChanges -> the same plain shape as brute_force_local_changes."""
    return {
        "deletes": {tuple(k): v for k, v in changes.deletes.items()},
        "leaders": {tuple(k): tuple(v) for k, v in changes.leaders.items()},
        "elected_leaders": {tuple(k): tuple(v) for k, v in changes.elected_leaders.items()},
        "followers": {tuple(k): tuple(v) for k, v in changes.followers.items()},
        "chunk_stops": {tuple(k): v for k, v in changes.chunk_stops.items()},
        "chunk_creates": {tuple(k): tuple(v) for k, v in changes.chunk_creates.items()},
        "chunk_deletes": {tuple(k): tuple(v) for k, v in changes.chunk_deletes.items()},
    }
