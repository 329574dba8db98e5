"""Log store throughput on disk: append (leader, idempotent leader, follower), read, recovery.

1 KiB records in batches of 100 (about 100 KiB per batch), one batch per append call, as a
producer with linger sends them. Prints one JSON line per operation with records/s and MB/s
(MB = 10^6 bytes of batch data), the best of --repeat runs. Appends go to the page cache
(Kafka's default: no forced flush); the final flush is timed separately. Reads are
consumer-sized (1 MiB) sequential reads from the start. "recover" is an open after a crash (no
clean close): every batch CRC-checked and re-indexed. Works in temporary directories under
/tmp, removed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from _report import emit, peak_rss_mib
from chunkraft.broker_agent.storage import LogConfig, UnifiedLog
from chunkraft.dataplane.record_batch import build_batch

TOPIC = uuid.UUID("3b8f2f3c-1d0c-4a7e-9c55-6a2f1f0d9e11")


Timings = dict[str, tuple[int, float]]  # op -> (bytes, seconds)


def run_once(root: Path, n: int, plain: bytes, idempotent: list[bytes]) -> Timings:
    """One pass of every operation in fresh directories under ``root``."""
    config = LogConfig(segment_bytes=256 << 20)
    out: Timings = {}
    log = UnifiedLog.open(root / "leader-0", TOPIC, config)
    t0 = time.perf_counter()
    for _ in range(n):
        log.append_as_leader(plain, 0)
    t1 = time.perf_counter()
    out["append_leader"] = (n * len(plain), t1 - t0)
    log.flush()
    out["flush"] = (n * len(plain), time.perf_counter() - t1)

    t0 = time.perf_counter()
    offset = 0
    read_bytes = 0
    chunks = []
    while offset < log.log_end_offset:
        got = log.read(offset, 1 << 20, log.log_end_offset)
        chunks.append(got.records)
        read_bytes += len(got.records)
        offset = got.next_offset
    out["read_1MiB"] = (read_bytes, time.perf_counter() - t0)
    log.close_files()  # a crash: the next open checks every batch
    t0 = time.perf_counter()
    log = UnifiedLog.open(root / "leader-0", TOPIC, config)
    out["recover"] = (read_bytes, time.perf_counter() - t0)
    log.close()

    log = UnifiedLog.open(root / "idem-0", TOPIC, config)
    t0 = time.perf_counter()
    for data in idempotent:
        log.append_as_leader(data, 0)
    out["append_leader_idempotent"] = (n * len(plain), time.perf_counter() - t0)
    log.close()

    log = UnifiedLog.open(root / "follower-0", TOPIC, config)
    t0 = time.perf_counter()
    for chunk in chunks:
        log.append_as_follower(chunk)
    out["append_follower_1MiB"] = (read_bytes, time.perf_counter() - t0)
    log.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=500, help="batches per run (100 records)")
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--records-per-batch", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best of each is kept")
    parser.add_argument("--dir", type=Path, default=None, help="parent dir (default /tmp)")
    args = parser.parse_args()
    n, per, size = args.batches, args.records_per_batch, args.record_bytes
    value = b"v" * size
    plain = build_batch([(b"key-%d" % i, value, 1_000 + i) for i in range(per)])
    idempotent = [
        build_batch(
            [(b"key-%d" % i, value, 1_000 + i) for i in range(per)],
            producer_id=42,
            producer_epoch=0,
            base_sequence=b * per,
        )
        for b in range(n)
    ]
    records = n * per
    best: Timings = {}
    for _ in range(args.repeat):
        parent = tempfile.mkdtemp(prefix="A2_bench_", dir=args.dir or "/tmp")
        try:
            for op, (nbytes, seconds) in run_once(Path(parent), n, plain, idempotent).items():
                if op not in best or seconds < best[op][1]:
                    best[op] = (nbytes, seconds)
        finally:
            shutil.rmtree(parent, ignore_errors=True)
    for op, (nbytes, seconds) in best.items():
        emit(
            {
                "bench": "log",
                "op": op,
                "records": records,
                "batch_bytes": len(plain),
                "seconds": round(seconds, 4),
                "records_per_s": round(records / seconds),
                "mb_per_s": round(nbytes / seconds / 1e6, 1),
            }
        )
    emit({"bench": "log", "repeat": args.repeat, "peak_rss_mib": round(peak_rss_mib(), 1)})


if __name__ == "__main__":
    main()
