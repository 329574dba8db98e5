"""The ReplicaManager's settings (built by the broker's config from its properties file)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ReplicationConfig"]


@dataclass(frozen=True)
class ReplicationConfig:
    """Replication, chunk copy and housekeeping settings; Kafka's names and defaults.

    - ``replica_lag_time_max_ms`` (``replica.lag.time.max.ms``): an ISR follower not caught up
      for this long leaves the ISR.
    - ``replica_fetch_wait_max_ms`` / ``replica_fetch_max_bytes``: a follower's long poll.
    - ``replica_fetch_backoff_ms``: pause after a failed fetch or copy.
    - ``chunk_copy_throttle_bytes_per_second``: total byte rate of chunk copies (-1: unlimited).
    - ``min_insync_replicas`` (``min.insync.replicas``): acks=all needs at least this many in
      the ISR.
    - ``chunk_roll_timeout_ms``: how long a chunk roll waits for HW = LEO.
    - ``retention_check_interval_ms`` (``log.retention.check.interval.ms``),
      ``flush_check_interval_ms`` and ``hw_checkpoint_interval_ms``
      (``replica.high.watermark.checkpoint.interval.ms``).
    """

    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_backoff_ms: int = 1000
    chunk_copy_throttle_bytes_per_second: int = -1
    min_insync_replicas: int = 1
    chunk_roll_timeout_ms: int = 10_000
    retention_check_interval_ms: int = 300_000
    flush_check_interval_ms: int = 1000
    hw_checkpoint_interval_ms: int = 5000
