"""Fixtures for integration tests: real controller processes on 127.0.0.1 (LocalCluster).

Starting three controller processes costs seconds (imports), so each test module shares one
quorum (``module_cluster``, with the module's ``CLUSTER_PROPERTIES``), and each test takes it
through ``quorum``: every node running, ready and on the same image before the test starts,
whatever the test before did. The quorum is stopped when the module ends, pass or fail
(SIGTERM, then SIGKILL, only the PIDs LocalCluster started); when a test fails, the tail of
each node's log is printed with its report.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from chunkraft.local.local_cluster import LocalCluster
from tests.support.cluster_client import wait_converged

BASE_PROPERTIES = {
    # No broker heartbeats run during these tests: keep the leader from fencing the brokers
    # (fencing writes records that would change leader epochs under the tests' feet).
    "broker.session.timeout.ms": "600000",
    # Tests cut chunks with made-up StartTimestamps (1000: 1970), which the leader's retention
    # pass (default 7 days) would delete in the middle of a module that outlives its 5-minute
    # interval. Retention across chunks has its own tests (test_configs_live.py).
    "log.retention.check.interval.ms": "86400000",
}
LOG_TAIL_BYTES = 4000
READY_TIMEOUT = 60.0


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def log_tail(path: Path, size: int = LOG_TAIL_BYTES) -> str:
    try:
        data = path.read_bytes()
    except OSError as error:
        return f"<no log: {error}>"
    return data[-size:].decode("utf-8", "replace")


def stop_cluster(cluster: LocalCluster) -> None:
    """Stops every node LocalCluster started, killing any that SIGTERM did not stop."""
    try:
        cluster.stop(timeout=10.0)
    finally:
        for node in cluster.nodes.values():
            if node.process is not None and node.process.poll() is None:
                node.process.kill()
                node.process.wait(timeout=10)


@pytest.fixture(scope="module")
def module_cluster(tmp_path_factory: pytest.TempPathFactory,
                   request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """The module's 3-node quorum, with ``BASE_PROPERTIES`` and the module's
    ``CLUSTER_PROPERTIES``; started once, stopped at the end of the module."""
    extra = getattr(request.module, "CLUSTER_PROPERTIES", {})
    cluster = LocalCluster(tmp_path_factory.mktemp("quorum"),
                           extra_properties={**BASE_PROPERTIES, **extra})
    try:
        cluster.prepare()
        cluster.start()
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture
def quorum(module_cluster: LocalCluster, request: pytest.FixtureRequest
           ) -> Iterator[LocalCluster]:
    """The module's quorum with every node running, ready and converged on one image."""
    cluster = module_cluster
    try:
        cluster.start()  # any node an earlier test left stopped or exited
        cluster.wait_ready(timeout=READY_TIMEOUT)
        wait_converged(cluster, list(cluster.nodes), timeout=READY_TIMEOUT)
        yield cluster
    finally:
        report = getattr(request.node, "report_call", None)
        if report is None or report.failed:
            for node in cluster.nodes.values():
                print(f"---- controller {node.node_id} ({node.log_path}):\n"
                      f"{log_tail(node.log_path)}")
