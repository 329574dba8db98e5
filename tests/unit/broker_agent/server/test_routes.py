"""The data-plane routes without security: parsing, the ReplicaManager's answers, errors."""

from __future__ import annotations

import pytest

from chunkraft.broker_agent.server import create_broker_app
from chunkraft.error_codes import ApiException, Errors
from tests.unit.broker_agent.server.support import RECORDS, AsgiClient, FakeRuntime


@pytest.fixture
def runtime() -> FakeRuntime:
    return FakeRuntime()


@pytest.fixture
def client(runtime: FakeRuntime) -> AsgiClient:
    return AsgiClient(create_broker_app(runtime))


PRODUCE = {"acks": 1, "topics": [
    {"name": "orders", "partition_count": 3,
     "partitions": [{"index": 0, "records": RECORDS}, {"index": 2, "records": RECORDS}]}]}


def test_produce_passes_the_parsed_request_and_answers_its_response(
        client: AsgiClient, runtime: FakeRuntime) -> None:
    answer = client.post("/broker/v1/produce", json=PRODUCE)
    assert answer.status_code == 200
    partitions = answer.json()["topics"][0]["partitions"]
    assert [(p["index"], p["base_offset"], p["error_code"]) for p in partitions] == [
        (0, 0, 0), (2, 20, 0)]
    (name, request), = runtime.replica_manager.calls
    assert name == "produce" and request.acks == 1 and request.topics[0].partition_count == 3


def test_a_malformed_body_is_a_400_naming_the_field(client: AsgiClient) -> None:
    answer = client.post("/broker/v1/produce", json={"topics": [{"name": "x"}]})
    assert answer.status_code == 400
    assert answer.json()["error_name"] == "INVALID_REQUEST"
    assert "topics.0.partition_count" in answer.json()["message"]
    assert client.post("/broker/v1/fetch", content=b"{not json").status_code == 400


def test_an_api_exception_of_the_replica_manager_fails_the_whole_request(
        client: AsgiClient, runtime: FakeRuntime) -> None:
    runtime.replica_manager.fail_with = ApiException(Errors.REQUEST_TIMED_OUT, "slow disk")
    answer = client.post("/broker/v1/produce", json=PRODUCE)
    assert answer.status_code == 503
    assert answer.json() == {"error_code": Errors.REQUEST_TIMED_OUT.code,
                             "error_name": "REQUEST_TIMED_OUT", "message": "slow disk"}


def test_fetch_answers_records_and_offsets(client: AsgiClient, runtime: FakeRuntime) -> None:
    answer = client.post("/broker/v1/fetch", json={
        "max_wait_ms": 0, "isolation_level": 1, "topics": [
            {"topic": "orders", "partitions": [
                {"partition": 1, "fetch_offset": 4, "key_range": [0, 100]}]}]})
    assert answer.status_code == 200
    body = answer.json()
    assert body["error_code"] == 0
    partition = body["responses"][0]["partitions"][0]
    assert partition["records"] == RECORDS and partition["high_watermark"] == 5
    (_, request), = runtime.replica_manager.calls
    assert request.isolation_level == 1 and request.topics[0].partitions[0].key_range == (0, 100)


def test_list_offsets_and_offsets_for_leader_epoch(client: AsgiClient) -> None:
    answer = client.post("/broker/v1/list-offsets", json={"topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    assert answer.json()["topics"][0]["partitions"][0]["offset"] == 7
    answer = client.post("/broker/v1/offsets-for-leader-epoch", json={"topics": [
        {"topic": "orders", "partitions": [{"partition": 0, "leader_epoch": 3}]}]})
    assert answer.json()["topics"][0]["partitions"][0] == {
        "partition": 0, "error_code": 0, "error_message": None, "leader_epoch": 3,
        "end_offset": 9}


def test_init_producer_id_hands_out_fresh_ids_with_epoch_zero(client: AsgiClient) -> None:
    first = client.post("/broker/v1/init-producer-id", json={}).json()
    second = client.post("/broker/v1/init-producer-id",
                         json={"transactional_id": "tx-1"}).json()
    assert (first["producer_id"], first["producer_epoch"], first["error_code"]) == (1000, 0, 0)
    # A transactional id goes to the transaction coordinator: none runs in this fake runtime.
    assert second["error_code"] == Errors.COORDINATOR_NOT_AVAILABLE.code


def test_init_producer_id_refuses_half_an_id_and_passes_on_a_block_failure(
        client: AsgiClient, runtime: FakeRuntime) -> None:
    answer = client.post("/broker/v1/init-producer-id", json={"producer_id": 5})
    assert answer.json()["error_code"] == Errors.INVALID_REQUEST.code
    runtime.producer_ids.error = ApiException(Errors.COORDINATOR_LOAD_IN_PROGRESS, "no block")
    answer = client.post("/broker/v1/init-producer-id", json={})
    assert answer.status_code == 200
    assert answer.json()["error_code"] == Errors.COORDINATOR_LOAD_IN_PROGRESS.code


def test_write_txn_markers(client: AsgiClient) -> None:
    answer = client.post("/broker/v1/write-txn-markers", json={"markers": [
        {"producer_id": 4, "producer_epoch": 0, "transaction_result": True,
         "topics": [{"name": "orders", "partition_indexes": [0, 1]}]}]})
    assert answer.status_code == 200
    marker = answer.json()["markers"][0]
    assert marker["producer_id"] == 4
    assert [p["partition_index"] for p in marker["topics"][0]["partitions"]] == [0, 1]


def test_create_chunks_rolls_each_partition_and_answers_in_request_order(
        client: AsgiClient, runtime: FakeRuntime) -> None:
    runtime.replica_manager.roll_outcomes[("orders", 1)] = (
        Errors.NOT_LEADER_OR_FOLLOWER.code, "broker 0 does not lead orders-1")
    body = {"topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "broker_ids": [1, 2], "leader": 2},
        {"partition_index": 1, "broker_ids": [0, 1], "leader": -1}]}]}
    answer = client.post("/broker/v1/create-chunks", json=body)
    assert answer.status_code == 200
    assert answer.json() == {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": [
            {"name": "orders", "partitions": [
                {"partition_index": 0, "error_code": 0, "error_message": None},
                {"partition_index": 1, "error_code": Errors.NOT_LEADER_OR_FOLLOWER.code,
                 "error_message": "broker 0 does not lead orders-1"}]}]}
    assert [args for _, args in runtime.replica_manager.calls] == [
        ("orders", 0, (1, 2), 2), ("orders", 1, (0, 1), -1)]


def test_broker_cut_reads_the_answer_of_create_chunks(client: AsgiClient) -> None:
    """The controller's parser of this answer (api/leader_cuts) understands it."""
    from chunkraft.api.leader_cuts import _results

    answer = client.post("/broker/v1/create-chunks", json={"topics": [
        {"name": "orders", "partitions": [{"partition_index": 3, "broker_ids": [0],
                                           "leader": 0}]}]})
    assert _results(answer.json()) == {("orders", 3): (0, None)}


def test_status_health_and_readiness(client: AsgiClient, runtime: FakeRuntime) -> None:
    status = client.get("/broker/v1/status").json()
    assert status == {"node_id": 0, "cluster_id": runtime.cluster_id, "broker_epoch": 12,
                      "fenced": False, "shutting_down": False, "metadata_offset": 41,
                      "image_hash": None, "leaders": 2, "followers": 3, "inactive_chunks": 4}
    hashed = client.get("/broker/v1/status", params={"hash": "true"}).json()
    assert hashed["image_hash"] == runtime.follower.image.content_hash()
    assert client.get("/healthz").json() == {"status": "ok", "node_id": 0}
    assert client.get("/readyz").status_code == 200
    runtime.lifecycle.fenced = True
    answer = client.get("/readyz")
    assert answer.status_code == 503 and answer.json()["fenced"] is True
    runtime.lifecycle.fenced, runtime.lifecycle.broker_epoch = False, -1
    assert client.get("/readyz").json()["registered"] is False


def test_metrics_count_requests_by_route_and_show_the_broker_state(
        client: AsgiClient) -> None:
    client.post("/broker/v1/produce", json=PRODUCE)
    text = client.get("/metrics").text
    assert ('chunkraft_http_requests_total{method="POST",route="/broker/v1/produce",'
            'status="200"} 1.0') in text
    assert "chunkraft_broker_metadata_offset 41.0" in text
    assert 'chunkraft_broker_replicas{role="inactive_chunk"} 4.0' in text


def test_the_openapi_document_names_every_route_and_its_body(client: AsgiClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for route in ("produce", "fetch", "list-offsets", "offsets-for-leader-epoch",
                  "init-producer-id", "write-txn-markers", "create-chunks"):
        post = paths[f"/broker/v1/{route}"]["post"]
        assert post["requestBody"]["content"]["application/json"]["schema"]["properties"]
    assert "/broker/v1/status" in paths
