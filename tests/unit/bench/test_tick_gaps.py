"""bench/_tick_gaps.py: a window's tick gaps from two scrapes, its p99, max and fields."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from _tick_gaps import TickGaps, TickGapsUnavailable, TickGapWindow, parse_tick_gaps
from chunkraft.api.metrics import tick_gap_histogram
from chunkraft.controller.raft.log import TICK_GAP_BUCKETS
from chunkraft.controller.raft.process_log import TickReport

BOUNDS = (0.001, 0.01, 0.05, 0.1, math.inf)


def gaps(*per_bucket: int, total: float = 1.0) -> TickGaps:
    """A histogram of BOUNDS from per-bucket counts (made cumulative here)."""
    cumulative, running = [], 0
    for count in per_bucket:
        running += count
        cumulative.append(running)
    return TickGaps(BOUNDS, tuple(cumulative), total)


def test_between_is_the_window_s_difference() -> None:
    earlier = gaps(10, 5, 2, 0, 0, total=0.5)
    later = gaps(110, 25, 4, 1, 0, total=2.0)
    window = TickGaps.between(earlier, later)
    assert window.cumulative == (100, 120, 122, 123, 123)
    assert window.count == 123 and window.sum_seconds == pytest.approx(1.5)


def test_between_refuses_a_restart_or_other_buckets() -> None:
    with pytest.raises(ValueError, match="restarted"):
        TickGaps.between(gaps(10, 5, 0, 0, 0), gaps(3, 0, 0, 0, 0))
    other = TickGaps((0.5, math.inf), (1, 1), 0.1)
    with pytest.raises(ValueError, match="buckets changed"):
        TickGaps.between(gaps(1, 0, 0, 0, 0), other)


def test_the_p99_interpolates_within_its_bucket_as_prometheus_does() -> None:
    # 100 gaps: 90 of 1 ms or less, 10 in (10, 50] ms. Rank 99 is the 9th of those 10:
    # 10 + 40 * 9/10 = 46 ms.
    window = gaps(90, 0, 10, 0, 0)
    assert window.quantile(0.99) == pytest.approx(0.046)
    assert window.quantile(0.5) == pytest.approx(0.001 * 50 / 90)  # from 0 in the first bucket
    assert window.quantile(1.0) == pytest.approx(0.05)


def test_a_quantile_in_the_inf_bucket_is_the_last_finite_bound() -> None:
    window = gaps(1, 0, 0, 0, 99)
    assert window.quantile(0.99) == 0.1
    assert window.max_bound() == math.inf


def test_no_gaps_give_no_figures() -> None:
    empty = gaps(0, 0, 0, 0, 0, total=0.0)
    assert empty.quantile(0.99) is None and empty.max_bound() is None
    assert empty.fields() == {"leader_tick_gap_p99_ms": None, "leader_tick_gap_max_ms": None,
                              "leader_tick_gap_beyond_count": 0,
                              "leader_tick_gap_mean_ms": None, "leader_tick_gap_count": 0}


def test_the_max_is_the_bound_of_the_highest_bucket_reached() -> None:
    assert gaps(5, 0, 1, 0, 0).max_bound() == 0.05  # an empty bucket above does not count
    assert gaps(5, 3, 0, 0, 0).max_bound() == 0.01


def test_fields_are_strict_json_with_a_gap_past_the_last_bound_said_so() -> None:
    window = gaps(98, 1, 0, 0, 1, total=3.0)
    fields = window.fields()
    assert fields == {"leader_tick_gap_p99_ms": 10.0, "leader_tick_gap_max_ms": 100.0,
                      "leader_tick_gap_beyond_count": 1, "leader_tick_gap_mean_ms": 30.0,
                      "leader_tick_gap_count": 100}
    json.dumps(fields, allow_nan=False)  # no Infinity in a row
    assert set(gaps(1, 0, 0, 0, 0).fields("x_")) == {"x_p99_ms", "x_max_ms", "x_beyond_count",
                                                     "x_mean_ms", "x_count"}


def test_a_histogram_that_is_not_cumulative_is_refused() -> None:
    with pytest.raises(ValueError, match="not cumulative"):
        TickGaps(BOUNDS, (5, 3, 3, 3, 3), 0.1)
    with pytest.raises(ValueError, match=r"\+Inf"):
        TickGaps((0.1, 0.2), (1, 2), 0.1)


class _Ticks(Collector):
    def __init__(self, report: TickReport) -> None:
        self.report = report

    def collect(self) -> Iterator[Metric]:
        yield tick_gap_histogram(self.report)


def exposition(counts: tuple[int, ...], total: float) -> str:
    """What a controller's /metrics says of these counts (the exporter itself)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Ticks(TickReport(0, 0.0, counts, total)))
    return generate_latest(registry).decode()


def test_the_controller_s_own_exposition_parses_back() -> None:
    counts = tuple(range(1, len(TICK_GAP_BUCKETS) + 1))
    parsed = parse_tick_gaps(exposition(counts, 12.5))
    assert parsed.bounds == TICK_GAP_BUCKETS
    assert parsed.count == sum(counts) and parsed.sum_seconds == 12.5
    assert parsed.cumulative[0] == 1 and parsed.cumulative[1] == 3


def test_metrics_without_the_histogram_are_unavailable() -> None:
    with pytest.raises(TickGapsUnavailable, match="no chunkraft_raft_tick_gap_seconds"):
        parse_tick_gaps("# TYPE chunkraft_raft_epoch gauge\nchunkraft_raft_epoch 3.0\n")


def test_a_window_scrapes_at_its_start_and_end_with_the_credentials() -> None:
    """Against a real HTTP server: the window's figures are the difference of two scrapes,
    and each scrape carries the headers it was given."""
    n = len(TICK_GAP_BUCKETS)
    answers = [exposition((100,) + (0,) * (n - 1), 0.05),
               exposition((300, 0, 0, 0, 0, 0, 2) + (0,) * (n - 7), 0.35)]
    seen: list[tuple[str, str | None]] = []

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("authorization")))
            body = answers.pop(0).encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        window = TickGapWindow(f"http://127.0.0.1:{server.server_address[1]}",
                               headers={"authorization": "Bearer t"})
        window.start()
        window.end()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    assert seen == [("/metrics", "Bearer t"), ("/metrics", "Bearer t")]
    fields = window.fields()
    assert fields["leader_tick_gap_count"] == 202
    assert fields["leader_tick_gap_max_ms"] == 60.0  # the 0.06 bucket
    assert fields["leader_tick_gap_p99_ms"] == pytest.approx(1.0)
    assert fields["leader_tick_gap_mean_ms"] == pytest.approx(300 / 202, abs=0.001)
    assert fields["leader_tick_gap_unavailable"] is None


def test_a_window_that_could_not_scrape_has_no_figures_and_says_why() -> None:
    window = TickGapWindow("http://127.0.0.1:9")  # the discard port: nothing listens
    window.start()
    window.end()
    fields = window.fields()
    assert fields["leader_tick_gap_p99_ms"] is None and fields["leader_tick_gap_count"] is None
    assert "did not answer in 3 tries" in fields["leader_tick_gap_unavailable"]
