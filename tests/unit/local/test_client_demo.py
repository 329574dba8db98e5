"""The demo story's target (chunkraft.local.client_demo.DemoTarget): the story itself runs
against real processes in tests/e2e and, on seven hosts, in tests/integration/test_multi_host.py.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from chunkraft.local.client_demo import DemoError, DemoTarget, run_client_demo
from chunkraft.local.local_cluster import LocalCluster


def test_a_target_without_brokers_0_1_2_is_refused_before_anything_is_sent() -> None:
    target = DemoTarget(["http://198.18.0.1:9090"], {0: "http://198.18.0.4:9092",
                                                      1: "http://198.18.0.5:9092"}, "crt_t")
    with pytest.raises(DemoError, match=r"no URL for: \[2\]"):
        run_client_demo(target, io.StringIO())


def test_a_local_cluster_becomes_a_target_only_with_its_brokers_running(tmp_path: Path
                                                                        ) -> None:
    cluster = LocalCluster(tmp_path, size=1, broker_count=3)
    with pytest.raises(DemoError, match="needs broker agents 0, 1 and 2 running"):
        DemoTarget.of_local(cluster)
