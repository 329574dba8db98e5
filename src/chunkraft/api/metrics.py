"""Prometheus metrics of a controller node: ``GET /metrics``.

Two sources, both exposed from one :class:`~prometheus_client.CollectorRegistry` per app (not
the process-global one: tests build several apps in one process, and a registry holds state):

- every HTTP request, counted and timed by a pure-ASGI middleware, labelled by the matched
  route's template (``/v3/clusters/{cluster_id}/topics/{topic_name}``, never the raw path, so
  label cardinality stays bounded by the routes), method and status;
- the node's state, read when scraped: Raft commit index, leader, this node's own leadership
  gains and losses, the changes of leader and the term increments it saw, how long the leader
  has led, the Raft thread's tick lag, stalls and histogram of the gaps between its ticks, Raft
  connections the transport guard closed, Raft messages by format (sealed or Fernet), metadata
  offset, image size, writes in flight.

The middleware keeps its own counters (plain dicts, updated on the event loop thread) and turns
them into metric families only when scraped: prometheus_client's labelled children take a lock
and validate labels on every observation, which costs more than the rest of the middleware.
"""

from __future__ import annotations

import bisect
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from fastapi import FastAPI, Request, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chunkraft.api.access import cluster_refusal
from chunkraft.api.authentication import principal_of
from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import ErrorBody
from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.controller.raft.log import TICK_GAP_BUCKETS, TickCounts
from chunkraft.protocol.acls import AclOperation

__all__ = [
    "LATENCY_BUCKETS",
    "METRICS_CONTENT_TYPE",
    "UNMATCHED",
    "NodeCollector",
    "RequestMetricsMiddleware",
    "RequestStats",
    "install_metrics",
    "tick_gap_histogram",
]

LATENCY_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the latency histogram; reads of the image take well under a
millisecond, commits a few, a describe of 10,000 partitions a hundred or more."""

UNMATCHED = "unmatched"
"""The route label of a request that matches no route (one label for every unknown path)."""

METRICS_CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""Prometheus' text exposition format 0.0.4 (what every Prometheus version scrapes)."""

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_CLIENT_CLOSED = 499  # nginx's status for a request whose client went away before the answer


class RequestStats:
    """Request counts and latency histograms by (route template, method, status).

    Not thread-safe: only the event loop thread observes (the middleware) and reads (a scrape,
    served on the same loop), so no lock is needed.
    """

    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.buckets = buckets
        # key -> [count, sum of seconds, then one count per bucket (not cumulative), +Inf last]
        self._series: dict[tuple[str, str, str], list[float]] = {}
        self.in_progress = 0

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, str(status))
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = [0.0] * (len(self.buckets) + 3)
        series[0] += 1
        series[1] += seconds
        series[2 + bisect.bisect_left(self.buckets, seconds)] += 1

    def count(self, route: str, method: str, status: int) -> int:
        series = self._series.get((route, method, str(status)))
        return 0 if series is None else int(series[0])

    def families(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "chunkraft_http_requests", "HTTP requests answered, by route template, method "
            "and status", labels=("route", "method", "status"))
        latency = HistogramMetricFamily(
            "chunkraft_http_request_duration_seconds", "Time from a request's arrival to the "
            "end of its answer, by route template, method and status",
            labels=("route", "method", "status"))
        bounds = [*(_float_text(bound) for bound in self.buckets), "+Inf"]
        for key, series in sorted(self._series.items()):
            requests.add_metric(key, series[0])
            cumulative, running = [], 0.0
            for bound, count in zip(bounds, series[2:], strict=True):
                running += count
                cumulative.append((bound, running))
            latency.add_metric(list(key), cumulative, series[1])
        yield requests
        yield latency
        yield GaugeMetricFamily("chunkraft_http_requests_in_progress",
                                "HTTP requests received and not yet answered",
                                value=self.in_progress)


def _float_text(value: float) -> str:
    return repr(float(value))


class RequestMetricsMiddleware:
    """Pure-ASGI middleware that times every HTTP request into a :class:`RequestStats`.

    The route label is the template of the route that handled the request (Starlette puts it
    in ``scope["route"]``); a request answered before routing (a 401 of the authentication
    middleware) is matched against the app's routes here, and one that matches none is
    labelled :data:`UNMATCHED`. Costs a few microseconds per request (measured in
    tests/unit/api/test_metrics.py and bench/RESULTS.md).
    """

    def __init__(self, app: ASGIApp, stats: RequestStats) -> None:
        self.app = app
        self.stats = stats

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        stats = self.stats
        stats.in_progress += 1
        try:
            await self.app(scope, receive, send_status)
        except BaseException as error:
            if not status:
                status = 500 if isinstance(error, Exception) else _CLIENT_CLOSED
            raise
        finally:
            stats.in_progress -= 1
            method = scope["method"]
            stats.observe(route_template(scope), method if method in _METHODS else "other",
                          status or _CLIENT_CLOSED, time.perf_counter() - started)


def route_template(scope: Scope) -> str:
    """The path template of the route that matches ``scope`` (after the app ran), or
    :data:`UNMATCHED`."""
    route = scope.get("route")
    if route is None:
        route = _match_route(scope)
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED


def _match_route(scope: Scope) -> BaseRoute | None:
    app = scope.get("app")
    routes: Iterable[BaseRoute] = getattr(getattr(app, "router", None), "routes", ())
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
        if match is Match.PARTIAL and partial is None:
            partial = route
    return partial


class NodeCollector(Collector):
    """The controller node's state, read from its context when scraped.

    Image sizes are counted once per image (images are immutable), and the chunks once per
    topic image: counting them walks every partition of a topic, which a scrape every few
    seconds of a 1,000,000-partition image should not repeat for the topics that did not
    change (an unchanged topic is the same object in the next image).
    """

    def __init__(self, context: ControllerContext) -> None:
        self.context = context
        self._sized: MetadataImage | None = None
        self._sizes: dict[str, int] = {}
        self._topic_chunks: dict[uuid.UUID, tuple[TopicImage, int]] = {}

    def image_sizes(self, image: MetadataImage) -> dict[str, int]:
        if image is not self._sized:
            self._sizes = {
                "brokers": len(image.brokers),
                "fenced_brokers": sum(1 for broker in image.brokers if broker.fenced),
                "topics": len(image.topics),
                "partitions": image.topics.partition_count(),
                "chunks": self._chunk_count(image),
                "acls": len(image.acls),
            }
            self._sized = image
        return self._sizes

    def _chunk_count(self, image: MetadataImage) -> int:
        known = self._topic_chunks
        counted: dict[uuid.UUID, tuple[TopicImage, int]] = {}
        for topic_id, topic in image.topics.by_id.items():
            seen = known.get(topic_id)
            count = seen[1] if seen is not None and seen[0] is topic else topic.chunk_count()
            counted[topic_id] = (topic, count)
        self._topic_chunks = counted
        return sum(count for _, count in counted.values())

    def collect(self) -> Iterator[Metric]:
        context = self.context
        controller = context.controller
        status = controller.raft.status()
        image = controller.image
        yield _gauge("chunkraft_raft_commit_index", "The Raft log index this node knows "
                     "committed", status.commit_index)
        yield _gauge("chunkraft_raft_last_applied_index", "The last Raft log index this node "
                     "applied to its image", status.last_applied_index)
        yield _gauge("chunkraft_raft_epoch", "The current Raft term (Kafka's leader epoch of "
                     "the metadata log)", status.epoch)
        yield _gauge("chunkraft_raft_has_quorum", "1 if this node is in touch with a majority",
                     int(status.has_quorum))
        yield _gauge("chunkraft_raft_leader_id", "The node id of the Raft leader this node "
                     "knows, -1 if none", -1 if status.leader_id is None else status.leader_id)
        yield _gauge("chunkraft_raft_is_leader", "1 if this node leads the quorum",
                     int(controller.is_leader()))
        yield CounterMetricFamily("chunkraft_raft_leader_changes", "Times this node gained or "
                                  "lost the leadership since it started",
                                  value=controller.leader_changes)
        yield CounterMetricFamily(
            "chunkraft_raft_leadership_changes", "Times the leader this node knows changed "
            "(another node, or the same at a higher term) since it started, the first election "
            "included: 1 in a steady quorum", value=status.leadership_changes)
        yield CounterMetricFamily(
            "chunkraft_raft_term_increments", "How far this node's Raft term rose since it "
            "first knew a leader (every later election raises it by at least 1)",
            value=status.term_increments)
        yield _gauge("chunkraft_raft_leader_for_seconds", "How long the leader this node knows "
                     "has led, as this node saw it (0 with no leader)",
                     status.leader_for_seconds or 0.0)
        yield _gauge("chunkraft_raft_tick_lag_seconds", "Seconds since the Raft thread last "
                     "ticked; past the election timeout the node is not ready (see /readyz)",
                     status.tick_lag_seconds or 0.0)
        # Read once: from a Raft process, each read of ``ticks`` is a call to it.
        ticks: TickCounts | None = getattr(controller.raft, "ticks", None)
        if ticks is not None:
            yield CounterMetricFamily(
                "chunkraft_raft_tick_stalls", "Gaps between two Raft ticks longer than half the "
                "election timeout (each is logged with its length)", value=ticks.stalls)
            yield _gauge("chunkraft_raft_longest_tick_stall_seconds", "The longest gap between "
                         "two Raft ticks since the node started", ticks.longest_stall)
            yield tick_gap_histogram(ticks)
        closed = CounterMetricFamily(
            "chunkraft_raft_transport_closed_connections", "Raft connections the transport "
            "guard closed, by reason (oversize, undecryptable, handshake_timeout, "
            "message_timeout, per_address)", labels=("reason",))
        counts: Callable[[], Mapping[str, int]] | None = getattr(
            controller.raft, "transport_closed_counts", None)
        for reason, count in sorted((counts() if counts is not None else {}).items()):
            closed.add_metric((reason,), count)
        yield closed
        messages = CounterMetricFamily(
            "chunkraft_raft_transport_messages", "Raft messages sent and received, by format: "
            "sealed (AES-256-GCM, to peers that offered to read it) or fernet (pysyncobj's, "
            "the handshake's included), and the offers to read sealed messages",
            labels=("direction", "format"))
        message_counts: Callable[[], Mapping[str, int]] | None = getattr(
            controller.raft, "transport_message_counts", None)
        for name, count in sorted((message_counts() if message_counts else {}).items()):
            kind, _, direction = name.partition("_")  # "<format>_<direction>"
            messages.add_metric((direction, kind), count)
        yield messages
        yield _gauge("chunkraft_metadata_offset", "The last metadata log offset in this node's "
                     "image", image.offset)
        yield _gauge("chunkraft_metadata_failed", "1 if this node stopped applying the log "
                     "(see /readyz)", int(status.failure is not None))
        sizes = GaugeMetricFamily("chunkraft_image_size", "Entities in this node's metadata "
                                  "image, by kind", labels=("kind",))
        for kind, count in self.image_sizes(image).items():
            sizes.add_metric((kind,), count)
        yield sizes
        yield _gauge("chunkraft_controller_entries_in_flight", "Raft entries this node "
                     "proposed that are not yet committed and applied",
                     controller.entries_in_flight)
        yield _gauge("chunkraft_controller_writes_queued", "Writes validated and waiting for "
                     "room among the entries in flight", controller.writes_queued)
        info = GaugeMetricFamily("chunkraft_controller_info", "This controller's ids (always 1)",
                                 labels=("node_id", "cluster_id"))
        info.add_metric((str(context.node_id), context.cluster_id_text), 1)
        yield info


def tick_gap_histogram(ticks: TickCounts) -> HistogramMetricFamily:
    """``chunkraft_raft_tick_gap_seconds``: the gaps between two Raft ticks, its buckets
    cumulative as Prometheus requires (the watch counts each gap in one bucket only)."""
    counts = tuple(ticks.gap_counts)  # one copy: the Raft thread may go on counting
    if len(counts) != len(TICK_GAP_BUCKETS):
        raise ValueError(f"{len(counts)} tick-gap counts for {len(TICK_GAP_BUCKETS)} buckets")
    bounds = [*(_float_text(bound) for bound in TICK_GAP_BUCKETS[:-1]), "+Inf"]
    cumulative, running = [], 0
    for bound, count in zip(bounds, counts, strict=True):
        running += count
        cumulative.append((bound, float(running)))
    return HistogramMetricFamily(
        "chunkraft_raft_tick_gap_seconds", "Gaps between two ticks of the Raft thread (about "
        "50 ms apart when idle; a longer gap delays heartbeats and elections)",
        buckets=cumulative, sum_value=ticks.gap_sum)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class _StatsCollector(Collector):
    def __init__(self, stats: RequestStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        return self.stats.families()


_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/plain": {"schema": {"type": "string"}}},
          "description": "Prometheus text exposition format 0.0.4"},
    401: {"model": ErrorBody, "description": "No or invalid credentials"},
    403: {"model": ErrorBody, "description": "The principal may not DESCRIBE the cluster"},
}


def install_metrics(app: FastAPI) -> None:
    """Adds the request-metrics middleware and ``GET /metrics`` to ``app``.

    ``app.state.metrics`` is the app's :class:`RequestStats`, ``app.state.metrics_registry`` its
    registry. The controller's state is registered when the app has a context
    (``app.state.context``, set by ``create_app`` before this is called).
    """
    stats = RequestStats()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_StatsCollector(stats))
    context: ControllerContext | None = getattr(app.state, "context", None)
    if context is not None:
        registry.register(NodeCollector(context))
    app.state.metrics = stats
    app.state.metrics_registry = registry
    app.add_middleware(RequestMetricsMiddleware, stats=stats)

    @app.get("/metrics", tags=["health"], response_class=Response, responses=_RESPONSES,
             summary="Prometheus metrics: requests, Raft, image size (DESCRIBE on the cluster)")
    async def metrics(request: Request) -> Response:
        if context is not None:
            refusal = cluster_refusal(context, principal_of(request), AclOperation.DESCRIBE)
            if refusal is not None:
                return refusal
        return Response(generate_latest(registry), media_type=METRICS_CONTENT_TYPE)
