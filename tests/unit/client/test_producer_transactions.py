"""The transactional producer against a fake cluster: the coordinator calls, failed sends
and fencing."""

from __future__ import annotations

import httpx
import pytest

from chunkraft.client.producer import (
    ProducerError,
    ProducerFencedError,
    TransactionError,
)
from chunkraft.error_codes import Errors
from tests.unit.client.producer_fakes import FakeCluster, error_answer, make, once


def test_a_transaction_adds_partitions_before_producing_and_ends(
        cluster: FakeCluster) -> None:
    with make(cluster, transactional_id="tx", linger_ms=1) as sender:
        with pytest.raises(TransactionError):
            sender.send("t", b"early")
        sender.init_transactions()
        assert sender.producer_id == (500, 0)
        sender.begin_transaction()
        sender.send("t", b"a", partition=0)
        sender.send("t", b"b", partition=1)
        sender.send_offsets_to_transaction({("t", 0): 5}, "group")
        sender.commit_transaction()
        sender.begin_transaction()
        sender.abort_transaction()  # nothing joined it: no EndTxn
    paths = [p for p in cluster.paths() if p != "metadata"]
    assert paths.index("add-partitions-to-txn") < paths.index("produce") < paths.index(
        "end-txn")
    assert paths.index("add-offsets-to-txn") < paths.index("txn-offset-commit") < paths.index(
        "end-txn")
    ends = [body for _, path, body in cluster.calls if path == "end-txn"]
    assert [e["committed"] for e in ends] == [True]
    assert all(b.transactional for b in cluster.batches[("t", 0)])
    assert [host for host, path, _ in cluster.calls if path == "end-txn"] == ["b1"]


def test_coordinator_errors_are_retried(cluster: FakeCluster) -> None:
    cluster.scripts.append(once("init-producer-id", lambda body: httpx.Response(
        200, json={"error_code": Errors.NOT_COORDINATOR.code}), 2))
    cluster.scripts.append(once("end-txn", lambda body: httpx.Response(
        200, json={"error_code": Errors.CONCURRENT_TRANSACTIONS.code})))
    with make(cluster, transactional_id="tx") as sender:
        sender.init_transactions()
        sender.begin_transaction()
        sender.send("t", b"a", partition=0)
        sender.commit_transaction()
    assert cluster.paths().count("find-coordinator") >= 2
    assert cluster.paths().count("end-txn") == 2


def test_a_failed_send_only_allows_abort(cluster: FakeCluster) -> None:
    with make(cluster, transactional_id="tx", linger_ms=0) as sender:
        sender.init_transactions()
        sender.begin_transaction()
        cluster.scripts.append(once("produce", error_answer(Errors.INVALID_TXN_STATE)))
        sender.send("t", b"a", partition=0)
        with pytest.raises(TransactionError):
            sender.commit_transaction()
        sender.abort_transaction()
        ends = [body["committed"] for _, path, body in cluster.calls if path == "end-txn"]
        assert ends == [False]


def test_a_fenced_producer_can_only_close(cluster: FakeCluster) -> None:
    with make(cluster, transactional_id="tx", linger_ms=0) as sender:
        sender.init_transactions()
        sender.begin_transaction()
        cluster.scripts.append(once("add-partitions-to-txn", lambda body: httpx.Response(
            200, json={"error_code": Errors.PRODUCER_FENCED.code})))
        future = sender.send("t", b"zombie", partition=0)
        with pytest.raises(ProducerFencedError):
            sender.commit_transaction()
        assert isinstance(future.exception(), ProducerFencedError)
        with pytest.raises(ProducerError):
            sender.send("t", b"more", partition=0)
        with pytest.raises(ProducerFencedError):
            sender.begin_transaction()
