"""The KIPs' test plans, as written, against 3 controllers and 3 broker agents.

Every process is real (one LocalCluster for the module: controllers 1..3, brokers 0..2 on
127.0.0.1); the tests use only public APIs: the admin REST API (:class:`AdminClient`) for
topics and chunks, and :class:`Producer` / :class:`Consumer` against the brokers' URLs. Each
test has its own topic; the one that kills a broker runs last and restarts it. First of all,
before the module's cluster starts (one cluster at a time), ``chunkraft demo --exit`` tells the
same KIP-1114 plan with its own cluster, and its output is checked; ``chunkraft produce`` and
``chunkraft consume`` are run as commands against the module's cluster.

- KIP-1114 CreateChunkTest, non-transactional and transactional; AlterChunkAssignmentsTest.
- KIP-253: keyed records from several producers across a createPartitions; a consumer group
  sees every key's records in produce order.
- Key ranges: two consumers of complementary key ranges of one partition read every record
  exactly once (across a chunk cut).
- Transactions: aborted data is never seen by read_committed; a transaction coordinator killed
  mid-commit (kill -9 of its broker) finishes the commit; a zombie producer is fenced.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chunkraft.client.admin import AdminClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.client.consumer import Consumer
from chunkraft.client.producer import Producer
from chunkraft.dataplane.murmur2 import partition_for_key, positive_hash
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.protocol.data_plane import KEY_HASH_MAX
from tests.support.brokers import broker_cluster, wait_until

pytestmark = pytest.mark.slow

WAIT_S = 60.0
POLL_MS = 500
TXN_PARTITIONS = 3
"""``transaction.state.log.num.partitions``'s default."""


class Kit:
    """The module's cluster and the clients the tests build on it."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.urls = [cluster.broker_url(b) for b in sorted(cluster.broker_nodes)]
        self.admin = AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token))

    @contextmanager
    def producer(self, **options: Any) -> Iterator[Producer]:
        producer = Producer(self.urls, token=self.cluster.admin_token,
                            verify=self.cluster.verify, **options)
        try:
            yield producer
        finally:
            producer.close()

    @contextmanager
    def consumer(self, client_id: str, **options: Any) -> Iterator[Consumer]:
        options.setdefault("auto_offset_reset", "earliest")
        consumer = Consumer(self.urls, client_id=client_id, token=self.cluster.admin_token,
                            verify=self.cluster.verify, **options)
        try:
            yield consumer
        finally:
            consumer.close()

    def topic_on(self, name: str, assignment: list[list[int]]) -> str:
        self.admin.create_topic(name, None, None, assignment)
        return name

    def cut(self, topic: str, broker_id: int) -> None:
        (result,) = self.admin.create_chunks(
            [{"topic": topic, "partition": 0, "replicas": [broker_id]}])
        assert result["error_code"] == 0, result

    def active_leader(self, topic: str) -> int:
        leader: int = self.admin.get_partition(topic, 0)["leader_id"]
        return leader


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kit]:
    base: Path = tmp_path_factory.mktemp("kip-plans")
    with broker_cluster(base) as cluster:
        kit = Kit(cluster)
        try:
            yield kit
        finally:
            kit.admin.close()


def send_ten(producer: Producer, topic: str, prefix: str) -> list[int]:
    """10 records ``prefix-0`` .. ``prefix-9`` to partition 0; their offsets once acked."""
    futures = [producer.send(topic, f"{prefix}-{i}".encode(), partition=0) for i in range(10)]
    producer.flush()
    return [f.result(timeout=WAIT_S).offset for f in futures]


def polls(consumer: Consumer, want: int, timeout: float = WAIT_S) -> list[list[Any]]:
    """The consumer's non-empty polls until ``want`` records arrived (or ``timeout``)."""
    batches: list[list[Any]] = []
    got = 0
    ends = time.monotonic() + timeout
    while got < want and time.monotonic() < ends:
        records = consumer.poll(POLL_MS)
        if records:
            batches.append(list(records))
            got += len(records)
    assert got >= want, f"{got} of {want} records in {timeout} s: {batches}"
    return batches


def served(batch: list[Any]) -> tuple[set[int], list[int]]:
    """Which brokers served a poll, and its offsets."""
    return {r.broker_id for r in batch}, [r.offset for r in batch]


def drain(consumer: Consumer, quiet: float = 2.0, timeout: float = WAIT_S) -> list[Any]:
    """Every record until nothing arrived for ``quiet`` seconds."""
    records: list[Any] = []
    last = time.monotonic()
    ends = last + timeout
    while time.monotonic() - last < quiet and time.monotonic() < ends:
        batch = consumer.poll(POLL_MS)
        if batch:
            records.extend(batch)
            last = time.monotonic()
    return records


# ---------------------------------------------------------------------------- the commands


def test_chunkraft_demo_shows_which_broker_served_each_poll(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Runs first: the demo starts and stops its own cluster before the module's starts."""
    directory = tmp_path_factory.mktemp("demo")
    done = subprocess.run([sys.executable, "-m", "chunkraft", "demo", "--dir", str(directory),
                           "--exit"], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    polls = re.findall(r"^  poll (\d): broker (\d) served offsets (\d+)\.\.(\d+)", done.stdout,
                       re.MULTILINE)
    assert polls == [("1", "0", "0", "9"), ("2", "1", "10", "19"),   # CreateChunkTest
                     ("1", "0", "0", "9"), ("2", "1", "10", "19"),   # ... transactional
                     ("1", "2", "0", "9"), ("2", "1", "10", "19")], done.stdout  # the move
    assert "inactive chunk start 0 stop 9 end 19: replicas [0], epoch 0" in done.stdout
    assert "stopping the controllers..." in done.stdout


def test_chunkraft_demo_in_the_background_stops_on_sigint(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """A background job of a non-interactive shell starts with SIGINT ignored; the serving demo
    still stops every node it started on SIGINT (README: it serves until Ctrl-C)."""
    directory = tmp_path_factory.mktemp("demo-sigint")
    demo = subprocess.Popen(
        [sys.executable, "-m", "chunkraft", "demo", "--dir", str(directory)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    lines: list[str] = []
    serving = threading.Event()

    def read() -> None:
        assert demo.stdout is not None
        for line in demo.stdout:
            lines.append(line)
            if line.startswith("serving;"):
                serving.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert serving.wait(300), "".join(lines)
        ports = [int(port) for port in re.findall(r"http://127\.0\.0\.1:(\d+)", "".join(lines))]
        assert len(set(ports)) >= 6, "".join(lines)  # 3 controllers and 3 brokers listed
        demo.send_signal(signal.SIGINT)
        assert demo.wait(timeout=120) == 0, "".join(lines)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait(timeout=30)
        reader.join(timeout=10)
        assert demo.stdout is not None
        demo.stdout.close()
    output = "".join(lines)
    assert "stopping the brokers (controlled shutdown)..." in output
    assert "stopping the controllers..." in output
    for port in set(ports):  # nothing it started listens any more
        with socket.socket() as probe:
            probe.settimeout(1.0)
            assert probe.connect_ex(("127.0.0.1", port)) != 0, port


def chunkraft(*words: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chunkraft", *words], input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_console_producer_and_consumer(kit: Kit) -> None:
    topic = kit.topic_on("console", [[0]])
    connection = ["--bootstrap-server", ",".join(kit.urls),
                  "--command-config", str(kit.cluster.command_config_path), "--topic", topic]
    lines = "".join(f"key-{i}:value-{i}\n" for i in range(20))
    produced = chunkraft("produce", *connection, "--property", "parse.key=true",
                         "key.separator=:", stdin=lines)
    assert produced.returncode == 0 and produced.stdout == "", produced.stderr
    kit.cut(topic, 1)
    time.sleep(0.01)
    after_the_cut = int(time.time() * 1000)  # every record before it is older
    produced = chunkraft("produce", *connection, "--transactional-id", "console-txn",
                         stdin="in-a-transaction\n")
    assert produced.returncode == 0, produced.stderr
    # --from-timestamp: the first chunk (its successor started before the time) is skipped,
    # the active chunk's leader answers ListOffsets.
    recent = chunkraft("consume", *connection, "--from-timestamp", str(after_the_cut),
                       "--isolation-level", "read_committed", "--timeout-ms", "3000",
                       "--property", "print.offset=true", "print.broker=true")
    assert recent.returncode == 0, recent.stderr
    assert recent.stdout.splitlines() == ["Offset:20\tBroker:1\tin-a-transaction"]
    consumed = chunkraft("consume", *connection, "--from-beginning", "--timeout-ms", "5000",
                         "--isolation-level", "read_committed", "--property", "print.key=true",
                         "print.offset=true", "print.broker=true")
    assert consumed.returncode == 0, consumed.stderr
    rows = [line.split("\t") for line in consumed.stdout.splitlines()]
    assert rows[:20] == [[f"Offset:{i}", "Broker:0", f"key-{i}", f"value-{i}"]
                         for i in range(20)]
    assert rows[20:] == [["Offset:20", "Broker:1", "null", "in-a-transaction"]]
    assert "Processed a total of 21 messages" in consumed.stderr
    half = KEY_HASH_MAX // 2
    by_range = []
    for key_range in (f"0-{half}", f"{half + 1}-{KEY_HASH_MAX}"):
        done = chunkraft("consume", *connection, "--partition", "0", "--offset", "earliest",
                         "--key-range", key_range, "--group", "console-ranges",
                         "--timeout-ms", "3000", "--property", "print.key=true")
        assert done.returncode == 0, done.stderr
        by_range.append([line.split("\t")[0] for line in done.stdout.splitlines()])
    assert sorted(by_range[0] + by_range[1]) == sorted(
        [f"key-{i}" for i in range(20)] + ["null"])
    assert not set(by_range[0]) & set(by_range[1])
    missing = chunkraft("consume", "--bootstrap-server", ",".join(kit.urls), "--command-config",
                        str(kit.cluster.command_config_path), "--topic", "no-such-topic",
                        "--timeout-ms", "1000")
    assert missing.returncode == 1
    assert missing.stderr.startswith("Error while executing consume command : "), missing.stderr


# ------------------------------------------------------------------------------ KIP-1114


def test_kip1114_create_chunk_test(kit: Kit) -> None:
    topic = kit.topic_on("create-chunk", [[0]])
    with kit.producer() as producer:
        assert send_ten(producer, topic, "first") == list(range(10))
        kit.cut(topic, 1)
        assert send_ten(producer, topic, "second") == list(range(10, 20))
    assert kit.active_leader(topic) == 1
    with kit.consumer("create-chunk-reader") as consumer:
        consumer.assign([(topic, 0)])
        first, second = polls(consumer, 20)[:2]
    assert served(first) == ({0}, list(range(10)))
    assert served(second) == ({1}, list(range(10, 20)))
    assert [r.value for r in first + second] == (
        [f"first-{i}".encode() for i in range(10)] + [f"second-{i}".encode() for i in range(10)])


def test_kip1114_create_chunk_test_transactional(kit: Kit) -> None:
    topic = kit.topic_on("create-chunk-txn", [[0]])
    with kit.producer() as producer:
        assert send_ten(producer, topic, "plain") == list(range(10))
    with kit.producer(transactional_id="create-chunk-txn") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        assert send_ten(producer, topic, "txn") == list(range(10, 20))
        kit.cut(topic, 1)  # the open transaction holds the LSO at 10: stop 9, end 19
        chunks = kit.admin.list_chunks(topic, 0)
        inactive = [c for c in chunks if not c["is_active"]]
        assert [(c["start_offset"], c["stop_offset"], c["end_offset"]) for c in inactive] \
            == [(0, 9, 19)]
        producer.commit_transaction()
    with kit.consumer("create-chunk-txn-reader", isolation_level="read_committed") as consumer:
        consumer.assign([(topic, 0)])
        first, second = polls(consumer, 20)[:2]
    assert served(first) == ({0}, list(range(10)))
    assert served(second) == ({1}, list(range(10, 20)))
    assert [r.value for r in second] == [f"txn-{i}".encode() for i in range(10)]


def test_kip1114_alter_chunk_assignments_test(kit: Kit) -> None:
    topic = kit.topic_on("alter-chunk", [[0]])
    with kit.producer() as producer:
        send_ten(producer, topic, "first")
        kit.cut(topic, 1)
        send_ten(producer, topic, "second")
    (moved,) = kit.admin.alter_chunk_assignments(
        [{"topic": topic, "partition": 0, "start_offset": 0, "replicas": [2]}])
    assert moved["error_code"] == 0, moved
    wait_until(lambda: kit.admin.get_chunk(topic, 0, 0)["replica_ids"] == [2],
               "the first chunk moved to broker 2", WAIT_S, 0.2)
    with kit.consumer("alter-chunk-reader") as consumer:
        consumer.assign([(topic, 0)])
        first, second = polls(consumer, 20)[:2]
    assert served(first) == ({2}, list(range(10)))
    assert served(second) == ({1}, list(range(10, 20)))


def test_one_producer_across_cuts_back_to_a_broker(kit: Kit) -> None:
    """The active chunk goes 0 -> 1 -> 2 -> 0 under one idempotent producer; every record is
    acknowledged and read once, each chunk from its broker."""
    topic = kit.topic_on("cut-round-trip", [[0]])
    with kit.producer() as producer:
        for slice_index, broker_id in enumerate((1, 2, 0, None)):
            assert send_ten(producer, topic, f"slice{slice_index}") == list(
                range(10 * slice_index, 10 * slice_index + 10))
            if broker_id is not None:
                kit.cut(topic, broker_id)
    with kit.consumer("cut-round-trip-reader") as consumer:
        consumer.assign([(topic, 0)])
        batches = polls(consumer, 40)
    served_by = [(r.offset // 10, r.broker_id) for b in batches for r in b]
    assert sorted(set(served_by)) == [(0, 0), (1, 1), (2, 2), (3, 0)]


# ------------------------------------------------------------------------------- KIP-253


def test_kip253_keyed_order_across_create_partitions(kit: Kit) -> None:
    topic = kit.topic_on("kip253", [[0, 1, 2], [1, 2, 0]])
    producers, keys_each, per_key = 3, 4, 30
    sent: dict[bytes, list[bytes]] = {}
    halfway = threading.Barrier(producers + 1, timeout=WAIT_S)
    expanded = threading.Event()
    failures: list[BaseException] = []

    def produce(index: int) -> None:
        try:
            with kit.producer(client_id=f"kip253-{index}") as producer:
                keys = [f"p{index}-k{k}".encode() for k in range(keys_each)]
                for n in range(per_key):
                    if n == per_key // 2:
                        producer.flush()
                        halfway.wait()
                        expanded.wait(WAIT_S)
                    for key in keys:
                        value = key + f":{n}".encode()
                        sent.setdefault(key, []).append(value)
                        producer.send(topic, value, key=key)
                    time.sleep(0.01)
                producer.flush()
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(producers)]
    for thread in threads:
        thread.start()
    halfway.wait()
    kit.admin.alter_topic_partitions(topic, 4)
    expanded.set()
    for thread in threads:
        thread.join(WAIT_S * 2)
    assert not failures, failures
    total = producers * keys_each * per_key
    with kit.consumer("kip253-reader", group_id="kip253-group") as consumer:
        consumer.subscribe([topic])
        records = [r for batch in polls(consumer, total) for r in batch]
    seen: dict[bytes, list[bytes]] = {}
    for record in records:
        seen.setdefault(record.key, []).append(record.value)
    assert seen == sent  # every key's records, once each, in produce order
    # the keys' partitions before and after the expansion were all read
    assert {r.partition for r in records} == {partition_for_key(k, n) for k in sent
                                              for n in (2, 4)}


# ----------------------------------------------------------------------------- key ranges


def test_complementary_key_ranges_read_every_record_once(kit: Kit) -> None:
    topic = kit.topic_on("key-ranges", [[0]])
    half = KEY_HASH_MAX // 2
    low, high = (0, half), (half + 1, KEY_HASH_MAX)
    keys = [f"key-{i}".encode() for i in range(200)]
    with kit.producer() as producer:
        for key in keys[:100]:
            producer.send(topic, key, key=key, partition=0)
        producer.flush()
        kit.cut(topic, 1)  # the ranges are read across a chunk edge too
        for key in keys[100:]:
            producer.send(topic, key, key=key, partition=0)
        producer.flush()
    wanted = {r: {k for k in keys if r[0] <= positive_hash(k) <= r[1]} for r in (low, high)}
    assert wanted[low] and wanted[high]
    read: dict[tuple[int, int], list[Any]] = {}
    for key_range in (low, high):
        with kit.consumer(f"key-range-{key_range[0]}") as consumer:
            consumer.assign({(topic, 0): [key_range]})
            read[key_range] = [r for b in polls(consumer, len(wanted[key_range])) for r in b]
            read[key_range] += drain(consumer, quiet=1.0)
    for key_range, records in read.items():
        assert sorted(r.key for r in records) == sorted(wanted[key_range])
    assert sorted(r.key for rs in read.values() for r in rs) == sorted(keys)  # exactly once


# --------------------------------------------------------------------------- transactions


def test_aborted_data_is_never_seen_by_read_committed(kit: Kit) -> None:
    topic = kit.topic_on("txn-abort", [[0, 1, 2]])
    with kit.producer(transactional_id="txn-abort") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic, f"aborted-{i}".encode(), partition=0)
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic, f"committed-{i}".encode(), partition=0)
        producer.commit_transaction()
    with kit.consumer("txn-abort-committed", isolation_level="read_committed") as consumer:
        consumer.assign([(topic, 0)])
        committed = [r.value for b in polls(consumer, 10) for r in b]
        committed += [r.value for r in drain(consumer, quiet=1.0)]
    assert committed == [f"committed-{i}".encode() for i in range(10)]
    with kit.consumer("txn-abort-uncommitted") as consumer:
        consumer.assign([(topic, 0)])
        everything = [r.value for b in polls(consumer, 20) for r in b]
    assert set(everything) == {f"{kind}-{i}".encode() for kind in ("aborted", "committed")
                               for i in range(10)}


def test_a_zombie_producer_is_fenced(kit: Kit) -> None:
    topic = kit.topic_on("txn-zombie", [[0, 1, 2]])
    with kit.producer(transactional_id="zombie") as zombie, \
            kit.producer(transactional_id="zombie") as successor:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send(topic, b"zombie-0", partition=0)
        zombie.flush()
        successor.init_transactions()  # epoch + 1: the zombie's open transaction is aborted
        with pytest.raises(Exception) as fenced:
            zombie.send(topic, b"zombie-1", partition=0)
            zombie.commit_transaction()
        assert "FENCED" in str(fenced.value) or "EPOCH" in str(fenced.value), fenced.value
        successor.begin_transaction()
        successor.send(topic, b"successor-0", partition=0)
        successor.commit_transaction()
    with kit.consumer("txn-zombie-reader", isolation_level="read_committed") as consumer:
        consumer.assign([(topic, 0)])
        values = [r.value for b in polls(consumer, 1) for r in b]
        values += [r.value for r in drain(consumer, quiet=1.0)]
    assert values == [b"successor-0"]


def test_a_coordinator_killed_mid_commit_finishes_the_commit(kit: Kit) -> None:
    """Runs last: it kills a broker (the transaction coordinator) and restarts it."""
    topic = kit.topic_on("txn-kill", [[0, 1, 2]])
    transactional_id = "txn-kill"
    with kit.producer(transactional_id=transactional_id) as producer:
        producer.init_transactions()
        state = kit.admin.get_partition(
            "__transaction_state", positive_hash(transactional_id.encode()) % TXN_PARTITIONS)
        coordinator = int(state["leader_id"])
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic, f"txn-{i}".encode(), partition=0)
        producer.flush()
        outcome: list[BaseException | None] = []

        def commit() -> None:
            try:
                producer.commit_transaction()
                outcome.append(None)
            except BaseException as error:  # reported below
                outcome.append(error)

        committing = threading.Thread(target=commit)
        committing.start()
        kit.cluster.kill_broker(coordinator)  # kill -9 while EndTxn / markers are under way
        committing.join(WAIT_S * 2)
        assert outcome == [None], outcome  # the producer found the next coordinator
    kit.cluster.start_broker(coordinator)
    kit.cluster.wait_brokers_ready(timeout=WAIT_S)
    with kit.consumer("txn-kill-reader", isolation_level="read_committed") as consumer:
        consumer.assign([(topic, 0)])
        values = [r.value for b in polls(consumer, 10) for r in b]
    assert values == [f"txn-{i}".encode() for i in range(10)]

