"""How a Producer ends: close() leaves no thread or task behind, and an interpreter that exits
without close() stops the sender once instead of letting it retry (and log) for ever."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from chunkraft.client.producer import ProducerError
from tests.unit.client.producer_fakes import FakeCluster, make

REPOSITORY = Path(__file__).resolve().parents[3]


def _threads_of(client_id: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(client_id)]


def test_close_leaves_no_thread_of_the_producer(cluster: FakeCluster) -> None:
    producer = make(cluster, linger_ms=1, client_id="closing-unit")
    producer.send("t", b"v", key=b"k").get(10)
    producer._loop.call_soon_threadsafe(producer._request_refresh)  # the worker thread runs
    ends = time.monotonic() + 5
    while producer._refreshes < 1 and time.monotonic() < ends:
        time.sleep(0.01)
    assert any(name.startswith("closing-unit-metadata") for name in _threads_of("closing-unit"))
    producer.close()
    ends = time.monotonic() + 5
    while _threads_of("closing-unit") and time.monotonic() < ends:
        time.sleep(0.02)
    assert _threads_of("closing-unit") == []
    with pytest.raises(ProducerError, match="closed"):
        producer.send("t", b"late")


def test_a_sender_that_can_no_longer_get_a_worker_thread_stops_once(
        cluster: FakeCluster, caplog: pytest.LogCaptureFixture) -> None:
    """What an interpreter exit does to the producer's executor (it refuses work): the
    sender fails what is queued, says so once and ends, and send() refuses."""
    caplog.set_level(logging.WARNING, "chunkraft.client")
    producer = make(cluster, linger_ms=5000, client_id="exiting-unit")
    try:
        producer.send("t", b"v", key=b"k")
        producer.flush(timeout=10)
        producer._refresher.shutdown(wait=True)
        queued = producer.send("t", b"w", key=b"k")  # lingers: still queued when the sender stops
        producer._loop.call_soon_threadsafe(producer._request_refresh)
        producer._thread.join(timeout=10)
        assert not producer._thread.is_alive()
        with pytest.raises(ProducerError, match="interpreter is exiting"):
            queued.get(1)
        with pytest.raises(ProducerError, match="interpreter is exiting"):
            producer.send("t", b"x")
        stops = [r for r in caplog.records if "interpreter is exiting" in r.getMessage()]
        assert len(stops) == 1, caplog.text
    finally:
        producer.close(timeout=5)


SCRIPT = textwrap.dedent("""
    import threading, time
    from tests.unit.client.producer_fakes import FakeCluster, make

    cluster = FakeCluster(topics={"t": 3})
    producer = make(cluster, linger_ms=1, metadata_max_age_ms=5)
    producer.send("t", b"v", key=b"k").get(10)
    # A thread of the application's that outlives main: the interpreter starts its exit
    # (executors refuse work) but the process goes on for as long as this thread runs.
    threading.Thread(target=time.sleep, args=(4.0,)).start()
    print("main returns without close()", flush=True)
""")


def test_an_interpreter_exit_without_close_ends_quietly() -> None:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPOSITORY, capture_output=True,
                          text=True, timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    assert "main returns without close()" in done.stdout
    assert "Task exception was never retrieved" not in done.stderr, done.stderr[-2000:]
    assert "cannot schedule new futures" not in done.stderr.replace(
        "interpreter is exiting (cannot schedule new futures", ""), done.stderr[-2000:]
    assert len(done.stderr) < 2000, done.stderr[-2000:]  # one warning at most, never a flood
    assert took < 30
