"""AdminClient (chunkraft.client.admin): bootstrap failover, idempotency keys kept across
retries, read-your-writes offsets, pagination and errors, over httpx's MockTransport (the
client's one network boundary)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import pytest

from chunkraft.client.admin import AdminClient, AdminError, split_bootstrap
from chunkraft.client.command_config import CommandConfig

A = "http://a:9090"
B = "http://b:9090"
CLUSTERS = {"kind": "KafkaClusterList", "metadata": {"self": "", "next": None,
                                                     "metadata_offset": 5},
            "data": [{"cluster_id": "Cid-1"}]}


def client(handler: Callable[[httpx.Request], httpx.Response], urls: str = f"{A},{B}",
           **options: object) -> AdminClient:
    return AdminClient(urls, CommandConfig(token="crt_t"),
                       transport=httpx.MockTransport(handler), **options)  # type: ignore[arg-type]


def refuse(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno 111] Connection refused", request=request)


def test_split_bootstrap_trims_and_checks() -> None:
    assert split_bootstrap(f" {A}/ ,{B}") == [A, B]
    with pytest.raises(ValueError, match="no bootstrap server"):
        split_bootstrap(" , ")
    with pytest.raises(ValueError, match="not an http"):
        split_bootstrap("a:9090")


def test_a_refused_connection_moves_to_the_next_url() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url.host))
        if request.url.host == "a":
            return refuse(request)
        assert request.headers["authorization"] == "Bearer crt_t"
        return httpx.Response(200, json=CLUSTERS, headers={"X-Metadata-Offset": "5"})

    with client(handler) as admin:
        assert admin.cluster_id() == "Cid-1"
        assert admin.cluster_id() == "Cid-1"  # remembered
    assert seen == ["a", "b"]


@pytest.mark.parametrize("status", [421, 502, 503, 504])
def test_a_write_is_retried_with_the_same_idempotency_key(status: int) -> None:
    keys: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["idempotency-key"])
        if len(keys) < 3:
            return httpx.Response(status, json={"error_code": 41, "error_name": "NOT_CONTROLLER",
                                                "message": "no leader"})
        return httpx.Response(201, json={"topic_name": "t"}, headers={"X-Metadata-Offset": "42"})

    with client(handler) as admin:
        assert admin.write("POST", "/v3/clusters/c/topics", {"topic_name": "t"}) == \
            {"topic_name": "t"}
        assert admin.last_offset == 42
    assert len(keys) == 3 and len(set(keys)) == 1 and len(keys[0]) == 32


def test_a_write_after_a_timeout_is_sent_again_with_its_key() -> None:
    keys: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["idempotency-key"])
        if len(keys) == 1:
            raise httpx.ReadTimeout("timed out", request=request)
        return httpx.Response(204)

    with client(handler) as admin:
        assert admin.write("DELETE", "/v3/clusters/c/topics/t") is None
    assert len(keys) == 2 and keys[0] == keys[1]


def test_a_silent_controller_costs_one_connect_timeout_then_the_next_is_tried() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.host)
        # The request's own timeouts: a connect bounded apart from the request timeout.
        assert request.extensions["timeout"]["connect"] == 10.0
        assert request.extensions["timeout"]["read"] == 30.0
        if len(asked) == 1:
            raise httpx.ConnectTimeout("timed out", request=request)
        return httpx.Response(201, json={"topic_name": "t"})

    with client(handler) as admin:
        assert admin.write("POST", "/v3/clusters/c/topics", {}) == {"topic_name": "t"}
    assert len(asked) == 2 and asked[0] != asked[1]
    with client(handler, timeout=2.0) as short:  # never longer than the request timeout
        assert short._http.timeout.connect == 2.0


def test_each_write_has_its_own_key() -> None:
    keys: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["idempotency-key"])
        return httpx.Response(200, json={})

    with client(handler) as admin:
        admin.write("POST", "/x", {})
        admin.write("POST", "/x", {})
    assert keys[0] != keys[1]


def test_reads_after_a_write_ask_for_its_offset() -> None:
    params: list[dict[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            assert "min_offset" not in request.url.params
            return httpx.Response(201, json={}, headers={"X-Metadata-Offset": "77"})
        params.append(dict(request.url.params))
        return httpx.Response(200, json={"data": []}, headers={"X-Metadata-Offset": "70"})

    with client(handler) as admin:
        admin.get("/v3/x")
        admin.write("POST", "/v3/y", {})
        admin.get("/v3/x")
        assert admin.last_offset == 77  # an older read does not lower it
    assert params[0] == {}
    assert params[1] == {"min_offset": "77", "wait_ms": "10000"}


def test_a_final_error_raises_with_the_kafka_name_and_message() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(409, json={"error_code": 36, "error_name": "TOPIC_ALREADY_EXISTS",
                                         "message": "Topic 't' already exists."})

    with client(handler) as admin, pytest.raises(AdminError) as raised:
        admin.write("POST", "/v3/x", {})
    assert raised.value.status == 409
    assert raised.value.error_name == "TOPIC_ALREADY_EXISTS"
    assert raised.value.describe() == "TOPIC_ALREADY_EXISTS: Topic 't' already exists."


def test_401_says_how_to_give_a_token() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error_code": 58, "error_name":
                                         "SASL_AUTHENTICATION_FAILED",
                                         "message": "invalid bearer token"})

    with client(handler) as admin, pytest.raises(AdminError) as raised:
        admin.get("/v3/clusters")
    text = raised.value.describe()
    assert text == ("SASL_AUTHENTICATION_FAILED: invalid bearer token (give a token: "
                    "bearer.token=... in the --command-config file, or CHUNKRAFT_TOKEN)")


def test_a_body_that_is_not_an_error_body_is_still_reported() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="boom\nwith lines")

    with client(handler) as admin, pytest.raises(AdminError) as raised:
        admin.get("/v3/clusters")
    assert raised.value.describe() == \
        "UNKNOWN_SERVER_ERROR: HTTP 500 Internal Server Error: boom with lines"


def test_nothing_answering_fails_fast_and_names_each_url() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url.host))
        return refuse(request)

    with client(handler) as admin, pytest.raises(AdminError) as raised:
        admin.get("/v3/clusters")
    assert raised.value.status is None and raised.value.error_name == "NETWORK_EXCEPTION"
    assert raised.value.message == ("no controller answered: http://a:9090: connection refused; "
                                    "http://b:9090: connection refused")
    assert calls == ["a", "b", "a", "b"]  # two rounds, then it gives up


def test_retries_are_bounded_by_the_attempt_count() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503, json={"error_code": 7, "error_name": "REQUEST_TIMED_OUT",
                                         "message": "not caught up"})

    with client(handler, max_attempts=5) as admin, pytest.raises(AdminError) as raised:
        admin.get("/v3/clusters")
    assert len(calls) == 5
    assert raised.value.error_name == "REQUEST_TIMED_OUT" and raised.value.status == 503


def test_get_all_follows_next_on_whichever_controller_answers() -> None:
    pages = {
        None: {"metadata": {"next": f"{A}/v3/l?page_token=p2&page_size=2"}, "data": [1, 2]},
        "p2": {"metadata": {"next": f"{A}/v3/l?page_token=p3&page_size=2"}, "data": [3, 4]},
        "p3": {"metadata": {"next": None}, "data": [5]},
    }
    hosts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        hosts.append(str(request.url.host))
        if len(hosts) == 2:
            return refuse(request)  # a fails after the first page: b serves the rest
        token = request.url.params.get("page_token")
        return httpx.Response(200, json=pages[token])

    with client(handler) as admin:
        assert admin.get_all("/v3/l", {"page_size": 2}) == [1, 2, 3, 4, 5]
    assert hosts == ["a", "a", "b", "b"]


def test_get_all_stops_on_a_next_it_has_seen() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"metadata": {"next": f"{A}/v3/l?page_token=same"},
                                         "data": [1]})

    with client(handler) as admin:
        assert admin.get_all("/v3/l") == [1, 1]


def test_resource_paths_escape_names_and_bodies_are_the_rest_shapes() -> None:
    requests: list[tuple[str, str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v3/clusters":
            return httpx.Response(200, json=CLUSTERS)
        body = json.loads(request.content) if request.content else None
        requests.append((request.method, request.url.raw_path.decode(), body))
        return httpx.Response(200, json={"data": []})

    with client(handler, urls=A) as admin:
        admin.create_topic("t", 3, 2)
        admin.create_topic("u", None, None, [[1, 2], [2, 3]], validate_only=True)
        admin.alter_topic_partitions("t", 5)
        admin.create_chunks([{"topic": "t", "partition": 0, "replicas": [1]}])
        admin.alter_chunk_assignments([{"topic": "t", "partition": 0, "start_offset": 0,
                                        "replicas": [2]}], validate_only=True)
        admin.get_chunk("t", 0, 100)
        admin.list_acls({"resource_type": "TOPIC"})
    assert requests == [
        ("POST", "/v3/clusters/Cid-1/topics",
         {"topic_name": "t", "validate_only": False, "partitions_count": 3,
          "replication_factor": 2}),
        ("POST", "/v3/clusters/Cid-1/topics",
         {"topic_name": "u", "validate_only": True, "replicas_assignments": [
             {"partition_id": 0, "broker_ids": [1, 2]},
             {"partition_id": 1, "broker_ids": [2, 3]}]}),
        ("PATCH", "/v3/clusters/Cid-1/topics/t", {"partitions_count": 5, "validate_only": False}),
        ("POST", "/v3/clusters/Cid-1/chunks:create",
         {"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}],
          "validate_only": False}),
        ("POST", "/v3/clusters/Cid-1/chunks:alter-assignments",
         {"chunks": [{"topic": "t", "partition": 0, "start_offset": 0, "replicas": [2]}],
          "validate_only": True}),
        ("GET", "/v3/clusters/Cid-1/topics/t/partitions/0/chunks/100", None),
        ("GET", "/v3/clusters/Cid-1/acls?resource_type=TOPIC", None),
    ]


def test_something_that_is_not_a_controller_is_named_as_such() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"hello": "world"})

    with client(handler) as admin, pytest.raises(AdminError, match="is this a chunkraft"):
        admin.cluster_id()


def test_an_election_longer_than_twenty_attempts_is_waited_out_within_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # While the leader restarts, the followers answer 503 NOT_CONTROLLER at once, for as long
    # as the election takes: the deadline (retry_for), not a count of fast answers, bounds it.
    monkeypatch.setattr("chunkraft.client.admin.time.sleep", lambda seconds: None)
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url.host))
        if len(calls) <= 40:
            return httpx.Response(503, json={"error_code": 41, "error_name": "NOT_CONTROLLER",
                                             "message": "forwarding to the leader failed"})
        return httpx.Response(200, json=CLUSTERS)

    with client(handler) as admin:
        assert admin.get("/v3/clusters") == CLUSTERS
    assert len(calls) == 41


def test_a_write_that_times_out_again_and_again_answers_within_retry_for() -> None:
    """Each attempt gets what is left of retry_for (rounded up to whole seconds), not a whole
    timeout: a createPartitions that could not commit once answered after 121 s."""
    read_timeouts: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        read_timeouts.append(request.extensions["timeout"]["read"])
        time.sleep(0.4)  # as if it waited that long, then timed out
        raise httpx.ReadTimeout("timed out", request=request)

    started = time.monotonic()
    with client(handler, timeout=30.0, retry_for=2.0) as admin, pytest.raises(AdminError):
        admin.write("POST", "/v3/clusters/c/topics:create-partitions", {"data": []})
    assert time.monotonic() - started < 3.5
    assert read_timeouts[0] == 2.0 and all(t <= 2.0 for t in read_timeouts)
    assert len(read_timeouts) >= 3
