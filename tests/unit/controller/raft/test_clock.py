"""controller/raft/clock: chunkraft reads the clock pysyncobj's own timestamps come from."""

from __future__ import annotations

import time

import pysyncobj.syncobj
import pytest

from chunkraft.controller.raft.clock import raft_clock


def test_the_raft_clock_is_the_one_pysyncobj_reads_even_when_it_changes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = pysyncobj.syncobj.monotonicTime()
    now = raft_clock()
    assert before <= now <= pysyncobj.syncobj.monotonicTime()
    monkeypatch.setattr(pysyncobj.syncobj, "monotonicTime", lambda: 42.0)
    assert raft_clock() == 42.0


def test_on_linux_it_is_the_raw_monotonic_clock_not_time_monotonic() -> None:
    raw = getattr(time, "CLOCK_MONOTONIC_RAW", None)
    if raw is None:
        pytest.fail("this project runs its Raft on Linux, where CLOCK_MONOTONIC_RAW exists")
    first = time.clock_gettime(raw)
    now = raft_clock()
    assert first <= now <= time.clock_gettime(raw)
