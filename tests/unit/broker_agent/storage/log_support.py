"""What the log store tests share: a small segment config, batches, a log at a fixed clock."""

import uuid
from pathlib import Path

from chunkraft.broker_agent.storage import (
    LogConfig,
    UnifiedLog,
)
from chunkraft.dataplane.record_batch import (
    build_batch,
    decode_records,
    iter_batches,
)

TOPIC = uuid.UUID("3b8f2f3c-1d0c-4a7e-9c55-6a2f1f0d9e11")
SMALL = LogConfig(segment_bytes=4000, index_interval_bytes=300)


def batch(n: int = 3, ts: int = 1000, **kw: int | bool) -> bytes:
    return build_batch([(b"k%d" % i, b"v" * 50, ts + i) for i in range(n)], **kw)  # type: ignore[arg-type]


def open_log(path: Path, config: LogConfig = SMALL) -> UnifiedLog:
    return UnifiedLog.open(path / "t-0", TOPIC, config, now_ms=lambda: 10_000)


def offsets(data: bytes) -> list[int]:
    return [r.offset for h, v in iter_batches(data) for r in decode_records(v)]


def fill(log: UnifiedLog, batches: int, n: int = 3) -> None:
    for i in range(batches):
        log.append_as_leader(batch(n, ts=1000 + 10 * i), 0)
