"""The Kafka-protocol twin of ``_http_load``: the same admin workloads through a stock client.

Each client is one thread with its own confluent-kafka ``AdminClient`` (librdkafka, one
instance and its connections per client: one client's requests never queue behind another's),
spread over spawned client processes like ``_http_load``'s tasks, with the same warm-up and
measured window (wall-clock ``start`` / ``end``), the same names and pools, and the same
:class:`~_http_load.LoadResult`. A request counts as done when its future resolved without an
exception; a failure is an error, never a silent skip.
"""

from __future__ import annotations

import resource
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context

from _http_load import MAX_REQUESTS_PER_TASK, LoadResult

__all__ = ["KafkaWorkload", "run_kafka_load"]


@dataclass(frozen=True)
class KafkaWorkload:
    """``kind``: ``create-topic`` (one topic of one partition, RF ``replication_factor``) or
    ``create-partitions`` (one pooled 1-partition topic grown to ``1 + batch``); ``settings``
    are librdkafka's (bootstrap.servers, SASL)."""

    kind: str
    settings: tuple[tuple[str, str], ...]
    prefix: str
    batch: int = 1
    replication_factor: int = 3
    pool: tuple[str, ...] = ()


def _one(workload: KafkaWorkload, admin: object, task: int, tasks: int, seq: int
         ) -> bool | None:
    from confluent_kafka.admin import NewPartitions, NewTopic

    if workload.kind == "create-topic":
        name = f"{workload.prefix}-{task}-{seq}"
        futures = admin.create_topics(  # type: ignore[attr-defined]
            [NewTopic(name, 1, workload.replication_factor)], request_timeout=30,
            operation_timeout=30)
    else:
        index = task + seq * tasks
        if index >= len(workload.pool):
            return None
        futures = admin.create_partitions(  # type: ignore[attr-defined]
            [NewPartitions(workload.pool[index], 1 + workload.batch)], request_timeout=30,
            operation_timeout=30)
    for future in futures.values():
        future.result(timeout=60)
    return True


def _thread(workload: KafkaWorkload, task: int, tasks: int, start: float, end: float,
            result: LoadResult, lock: threading.Lock) -> None:
    from confluent_kafka.admin import AdminClient

    try:
        admin = AdminClient(dict(workload.settings))
        # Connected and authenticated before the window; one topic's Metadata, not every
        # topic's (the earlier windows' topics would make it megabytes).
        admin.list_topics(topic=f"{workload.prefix}-warm-up", timeout=30)
    except Exception as error:  # a client that never started counts, never a silent 0
        with lock:
            result.errors += 1
            result.first_error = result.first_error or f"setup: {error!r}"[:300]
        return
    ops = errors = 0
    latencies: list[float] = []
    first_error = ""
    exhausted = False
    for seq in range(MAX_REQUESTS_PER_TASK):
        if time.time() >= end:
            break
        began = time.perf_counter()
        try:
            done = _one(workload, admin, task, tasks, seq)
        except Exception as error:  # the client's own exception for a Kafka error
            done = False
            first_error = first_error or repr(error)[:300]
        if done is None:
            exhausted = True
            break
        finished = time.time()
        if start <= finished <= end:
            if done:
                ops += 1
                latencies.append((time.perf_counter() - began) * 1000)
            else:
                errors += 1
    with lock:
        result.ops += ops
        result.errors += errors
        result.latencies_ms.extend(latencies)
        result.first_error = result.first_error or first_error
        result.pool_exhausted = result.pool_exhausted or exhausted


def worker(workload: KafkaWorkload, task_ids: list[int], tasks: int, start: float,
           end: float) -> LoadResult:
    """One client process: a thread per client; returns their merged result."""
    result = LoadResult(window_s=end - start)
    lock = threading.Lock()
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    threads = [threading.Thread(target=_thread, args=(workload, task, tasks, start, end,
                                                      result, lock), daemon=True)
               for task in task_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=end - time.time() + 90)
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    result.client_cpu_s = ((cpu_after.ru_utime + cpu_after.ru_stime)
                           - (cpu_before.ru_utime + cpu_before.ru_stime))
    return result


def run_kafka_load(workload: KafkaWorkload, *, clients: int, duration: float,
                   processes: int = 1) -> LoadResult:
    """``clients`` AdminClients over ``processes`` spawned processes: 1 s of warm-up (after
    4 s to start and connect), then a measured window of ``duration`` seconds."""
    context = get_context("spawn")
    start = time.time() + 4.0 + 1.0
    end = start + duration
    merged = LoadResult()
    with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
        futures = [pool.submit(worker, workload, list(range(p, clients, processes)), clients,
                               start, end) for p in range(processes)]
        for future in futures:
            merged.merge(future.result(timeout=duration + 180))
    return merged
