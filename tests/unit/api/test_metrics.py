"""chunkraft.api.metrics: the request middleware, the node's state and ``GET /metrics``."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import Receive, Scope, Send

from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.api.metrics import (
    LATENCY_BUCKETS,
    UNMATCHED,
    RequestMetricsMiddleware,
    RequestStats,
    install_metrics,
    tick_gap_histogram,
)
from chunkraft.controller.raft.local import LocalRaft
from chunkraft.controller.raft.log import TICK_GAP_BUCKETS, TickWatch
from chunkraft.controller.raft.process_log import TickReport
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token
from tests.unit.api.support import V1, running_node, start_brokers

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition, by name and sorted labels."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: Samples, name: str, **labels: str) -> float:
    return found[(name, tuple(sorted(labels.items())))]


def plain_app(inner: type | None = None) -> FastAPI:
    """An app with metrics and a few routes, and no controller behind it; ``inner`` is a
    middleware class placed inside the metrics middleware (where authentication is)."""
    app = FastAPI()
    if inner is not None:
        app.add_middleware(inner)
    install_metrics(app)  # added last: outermost

    @app.get("/items/{item_id}")
    async def item(item_id: int) -> dict[str, int]:
        return {"item_id": item_id}

    @app.post("/items/{item_id}/boom")
    async def boom(item_id: int) -> None:
        raise RuntimeError("the handler failed")

    return app


async def scrape(http: httpx.AsyncClient) -> Samples:
    answer = await http.get("/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return samples(answer.text)


def test_requests_are_counted_by_route_template_method_and_status() -> None:
    async def scenario() -> None:
        transport = httpx.ASGITransport(app=plain_app(), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
            for item_id in (1, 2, 3):
                assert (await http.get(f"/items/{item_id}")).status_code == 200
            assert (await http.get("/items/not-a-number")).status_code == 422
            assert (await http.delete("/items/4")).status_code == 405
            assert (await http.get("/nowhere/5")).status_code == 404
            assert (await http.get("/nowhere/6")).status_code == 404
            assert (await http.post("/items/7/boom")).status_code == 500
            found = await scrape(http)
        total = "chunkraft_http_requests_total"
        assert value(found, total, route="/items/{item_id}", method="GET", status="200") == 3
        assert value(found, total, route="/items/{item_id}", method="GET", status="422") == 1
        assert value(found, total, route="/items/{item_id}", method="DELETE", status="405") == 1
        assert value(found, total, route=UNMATCHED, method="GET", status="404") == 2
        assert value(found, total, route="/items/{item_id}/boom", method="POST",
                     status="500") == 1
        # no raw path ever becomes a label
        assert not any("/items/1" in dict(labels).get("route", "") for _, labels in found)
        count = "chunkraft_http_request_duration_seconds_count"
        assert value(found, count, route="/items/{item_id}", method="GET", status="200") == 3
        inf = value(found, "chunkraft_http_request_duration_seconds_bucket",
                    route="/items/{item_id}", method="GET", status="200", le="+Inf")
        assert inf == 3
        assert value(found, "chunkraft_http_requests_in_progress") == 1  # the scrape itself

    asyncio.run(scenario())


def test_an_answer_given_before_routing_still_gets_its_route_template() -> None:
    class Refusing:
        """Answers 401 to everything but /metrics before routing, as authentication does."""

        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"] != "/metrics":
                await JSONResponse({"message": "no"}, status_code=401)(scope, receive, send)
                return
            await self.app(scope, receive, send)

    app = plain_app(Refusing)

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
            assert (await http.get("/items/9")).status_code == 401
            assert (await http.get("/elsewhere")).status_code == 401
            found = await scrape(http)
        total = "chunkraft_http_requests_total"
        assert value(found, total, route="/items/{item_id}", method="GET", status="401") == 1
        assert value(found, total, route=UNMATCHED, method="GET", status="401") == 1

    asyncio.run(scenario())


def test_each_app_has_its_own_registry() -> None:
    async def scenario() -> None:
        first, second = plain_app(), plain_app()
        async with (httpx.AsyncClient(transport=httpx.ASGITransport(app=first),
                                      base_url="http://a") as one,
                    httpx.AsyncClient(transport=httpx.ASGITransport(app=second),
                                      base_url="http://b") as two):
            await one.get("/items/1")
            await one.get("/items/1")
            await two.get("/items/1")
            counted_one, counted_two = await scrape(one), await scrape(two)
        labels = {"route": "/items/{item_id}", "method": "GET", "status": "200"}
        assert value(counted_one, "chunkraft_http_requests_total", **labels) == 2
        assert value(counted_two, "chunkraft_http_requests_total", **labels) == 1

    asyncio.run(scenario())


def test_the_histogram_buckets_are_cumulative() -> None:
    stats = RequestStats()
    for seconds in (0.0001, 0.0005, 0.003, 0.003, 2.0, 100.0):
        stats.observe("/r", "GET", 200, seconds)
    families = {family.name: family for family in stats.families()}
    buckets = {s.labels["le"]: s.value
               for s in families["chunkraft_http_request_duration_seconds"].samples
               if s.name.endswith("_bucket")}
    assert buckets["0.0005"] == 2  # le is inclusive
    assert buckets["0.001"] == 2
    assert buckets["0.005"] == 4
    assert buckets["2.5"] == 5
    assert buckets[repr(LATENCY_BUCKETS[-1])] == 5
    assert buckets["+Inf"] == 6
    assert stats.count("/r", "GET", 200) == 6


def test_metrics_show_raft_leadership_and_the_image_size() -> None:
    async def scenario() -> None:
        async with running_node(node_id=2) as node:
            await start_brokers(node, (1, 2, 3))
            created = await node.post("create-topics", {"topics": [
                {"name": "orders", "num_partitions": 4, "replication_factor": 3}]})
            assert created.status_code == 200, created.text
            found = await scrape(node.http)
            image = node.context.controller.image
            status = node.context.controller.raft.status()
        assert value(found, "chunkraft_raft_is_leader") == 1
        assert value(found, "chunkraft_raft_leader_id") == 2
        assert value(found, "chunkraft_raft_commit_index") == status.commit_index
        assert value(found, "chunkraft_metadata_offset") == image.offset
        assert value(found, "chunkraft_raft_leader_changes_total") == (
            node.context.controller.leader_changes)
        # The in-memory Raft of the unit tests elects once and keeps its leader.
        assert value(found, "chunkraft_raft_leadership_changes_total") == 1
        assert value(found, "chunkraft_raft_term_increments_total") == 0
        assert value(found, "chunkraft_raft_leader_for_seconds") > 0
        assert value(found, "chunkraft_image_size", kind="brokers") == 3
        assert value(found, "chunkraft_image_size", kind="fenced_brokers") == 0
        assert value(found, "chunkraft_image_size", kind="topics") == 1
        assert value(found, "chunkraft_image_size", kind="partitions") == 4
        assert value(found, "chunkraft_image_size", kind="chunks") == image.topics.chunk_count()
        assert value(found, "chunkraft_image_size", kind="acls") == 0
        assert value(found, "chunkraft_controller_entries_in_flight") == 0
        assert value(found, "chunkraft_controller_writes_queued") == 0
        assert value(found, "chunkraft_controller_info", node_id="2",
                     cluster_id=node.context.cluster_id_text) == 1
        assert value(found, "chunkraft_http_requests_total", route="/controller/v1/create-topics",
                     method="POST", status="200") == 1

    asyncio.run(scenario())


def test_a_follower_reports_the_leader_it_knows_and_no_leadership() -> None:
    async def scenario() -> None:
        async with running_node(node_id=1) as node:
            node.raft.set_leader(False)
            found = await scrape(node.http)
        assert value(found, "chunkraft_raft_is_leader") == 0
        assert value(found, "chunkraft_raft_leader_id") == -1

    asyncio.run(scenario())


def test_the_middleware_costs_microseconds() -> None:
    """The REST layer may add 2 ms p50 in all; this middleware's share must be tiny. Bounded
    loosely (100 us a request) so a loaded CI machine does not fail it; bench/bench_api.py
    measures the real figure."""

    async def bare(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    wrapped = RequestMetricsMiddleware(bare, RequestStats())
    scope: Scope = {"type": "http", "method": "GET", "path": "/x", "app": None}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: Any) -> None:
        return None

    async def timed(app: Any, count: int) -> float:
        started = time.perf_counter()
        for _ in range(count):
            await app(dict(scope), receive, send)
        return time.perf_counter() - started

    async def scenario() -> float:
        count = 20_000
        await timed(wrapped, 1000)  # warm up
        best = min([await timed(wrapped, count) - await timed(bare, count) for _ in range(3)])
        return best / count

    per_request = asyncio.run(scenario())
    assert per_request < 100e-6, f"{per_request * 1e6:.1f} us a request"


def test_metrics_need_authentication_and_describe_on_the_cluster(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    admin, alice = add_token(path, "User:admin"), add_token(path, "User:alice")

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    async def scenario() -> None:
        authenticator = Authenticator(credentials=CredentialStore(path),
                                      forwarding_key=forwarding_key("x"))
        async with running_node(authenticator=authenticator,
                                authorizer=Authorizer(["User:admin"])) as node:
            anonymous = await node.http.get("/metrics")
            assert anonymous.status_code == 401, anonymous.text
            refused = await node.http.get("/metrics", headers=bearer(alice))
            assert refused.status_code == 403, refused.text
            assert refused.json()["error_name"] == "CLUSTER_AUTHORIZATION_FAILED"
            assert "User:alice" in refused.json()["message"]
            granted = await node.http.post(f"{V1}/create-acls", headers=bearer(admin), json={
                "creations": [{"resource_type": "CLUSTER", "resource_name": "kafka-cluster",
                               "principal": "User:alice", "operation": "DESCRIBE",
                               "permission_type": "ALLOW"}]})
            assert granted.status_code == 200, granted.text
            assert granted.json()["results"][0]["error_code"] == 0
            allowed = await node.http.get("/metrics", headers=bearer(alice))
            assert allowed.status_code == 200, allowed.text
            found = samples(allowed.text)
        total = "chunkraft_http_requests_total"
        # the 401, answered before routing, is counted under the route it was meant for
        assert value(found, total, route="/metrics", method="GET", status="401") == 1
        assert value(found, total, route="/metrics", method="GET", status="403") == 1
        assert value(found, "chunkraft_image_size", kind="acls") == 1

    asyncio.run(scenario())


def test_image_sizes_follow_every_change_counting_only_changed_topics() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node, (1, 2, 3))
            for name in ("a", "b"):
                created = await node.post("create-topics", {"topics": [
                    {"name": name, "num_partitions": 2, "replication_factor": 3}]})
                assert created.status_code == 200, created.text
            first = value(await scrape(node.http), "chunkraft_image_size", kind="chunks")
            cut = await node.post("create-chunks", {"topics": [{"name": "a", "partitions": [{
                "partition_index": 0, "broker_ids": [1, 2, 3], "prev_stop_offset": 99,
                "prev_end_offset": 99, "start_offset": 100, "start_timestamp": 1}]}]})
            assert cut.status_code == 200, cut.text
            assert cut.json()["topics"][0]["partitions"][0]["error_code"] == 0, cut.text
            found = await scrape(node.http)
            assert value(found, "chunkraft_image_size", kind="chunks") == first + 1
            deleted = await node.post("delete-topics", {"topic_names": ["a"]})
            assert deleted.status_code == 200, deleted.text
            found = await scrape(node.http)
            assert value(found, "chunkraft_image_size", kind="chunks") == 0
            assert value(found, "chunkraft_image_size", kind="topics") == 1
            assert value(found, "chunkraft_image_size", kind="partitions") == 2

    asyncio.run(scenario())


class TickingRaft(LocalRaft):
    """A LocalRaft with a Raft thread's tick counts: a TickWatch (embedded) or the Raft
    process's report."""

    def __init__(self, ticks: TickWatch | TickReport) -> None:
        super().__init__(1)
        self.ticks = ticks


def tick_gap_buckets(found: Samples) -> dict[str, float]:
    return {dict(labels)["le"]: count for (name, labels), count in found.items()
            if name == "chunkraft_raft_tick_gap_seconds_bucket"}


def test_the_raft_thread_s_tick_gaps_are_a_cumulative_histogram() -> None:
    now = [0.0]
    watch = TickWatch(0.5, clock=lambda: now[0])
    watch.tick()
    for gap in (0.0005, 0.002, 0.002, 0.04, 0.05, 0.3, 4.0):
        now[0] += gap
        watch.tick()

    async def scenario() -> Samples:
        async with running_node(TickingRaft(watch)) as node:
            return await scrape(node.http)

    found = asyncio.run(scenario())
    buckets = tick_gap_buckets(found)
    assert list(buckets) == [*(repr(b) for b in TICK_GAP_BUCKETS[:-1]), "+Inf"]
    assert buckets["0.001"] == 1
    assert buckets["0.0025"] == 3
    assert buckets["0.025"] == 3
    assert buckets["0.05"] == 5  # le is inclusive: the 50 ms gap is here
    assert buckets["0.5"] == 6
    assert buckets["2.5"] == 6
    assert buckets["+Inf"] == 7  # the 4 s gap
    assert value(found, "chunkraft_raft_tick_gap_seconds_count") == 7
    assert value(found, "chunkraft_raft_tick_gap_seconds_sum") == pytest.approx(4.3945)
    assert value(found, "chunkraft_raft_tick_stalls_total") == 2
    assert value(found, "chunkraft_raft_longest_tick_stall_seconds") == pytest.approx(4.0)


def test_the_raft_process_s_tick_report_gives_the_same_histogram() -> None:
    counts = (0, 4, 0, 0, 10, 2, 3, 0, 0, 0, 0, 0, 1)
    report = TickReport(stalls=1, longest_stall=3.0, gap_counts=counts, gap_sum=3.25)

    async def scenario() -> Samples:
        async with running_node(TickingRaft(report)) as node:
            return await scrape(node.http)

    found = asyncio.run(scenario())
    buckets = tick_gap_buckets(found)
    assert [buckets[le] for le in ("0.001", "0.0025", "0.025", "0.05", "0.06", "2.5", "+Inf")
            ] == [0, 4, 14, 16, 19, 19, 20]
    assert value(found, "chunkraft_raft_tick_gap_seconds_count") == 20
    assert value(found, "chunkraft_raft_tick_gap_seconds_sum") == 3.25


def test_a_node_without_a_raft_thread_has_no_tick_gap_histogram() -> None:
    async def scenario() -> Samples:
        async with running_node() as node:  # LocalRaft: no ticks
            return await scrape(node.http)

    found = asyncio.run(scenario())
    assert tick_gap_buckets(found) == {}
    assert ("chunkraft_raft_tick_gap_seconds_count", ()) not in found


def test_tick_counts_of_other_buckets_are_refused_not_mislabelled() -> None:
    report = TickReport(stalls=0, longest_stall=0.0, gap_counts=(1, 2, 3), gap_sum=0.1)
    with pytest.raises(ValueError, match=f"3 tick-gap counts for {len(TICK_GAP_BUCKETS)} "):
        tick_gap_histogram(report)
