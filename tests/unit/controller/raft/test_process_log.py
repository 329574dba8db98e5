"""RaftProcessLog with a real Raft process of one voter (a child process, a real journal)."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from chunkraft.controller.raft.log import TICK_GAP_BUCKETS
from chunkraft.controller.raft.node import RaftSettings
from chunkraft.controller.raft.process_log import RaftProcessError, RaftProcessLog, TickReport
from chunkraft.controller.raft.state_machine import BatchStatus
from chunkraft.local.local_cluster import free_ports
from tests.support.raft import batch, topic_record, wait_until

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def settings(data_dir: Path, cluster_id: uuid.UUID | None = None) -> RaftSettings:
    (port,) = free_ports(1)
    return RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=data_dir,
                        password="test", cluster_id=cluster_id or uuid.uuid4())


@pytest.fixture
def log(tmp_path: Path) -> Iterator[RaftProcessLog]:
    started = RaftProcessLog(settings(tmp_path))
    try:
        wait_until(started.is_leader, 10, "the one voter never led")
        yield started
    finally:
        started.close()


def commit(log: RaftProcessLog, numbers: range) -> None:
    for n in numbers:
        offset = log.state_machine.image.offset + 1
        (outcome,) = log.propose([batch([topic_record(n)], expected=offset)]).result(10)
        assert outcome.status is BatchStatus.COMMITTED, outcome


def test_proposals_commit_into_the_image_of_this_process(log: RaftProcessLog) -> None:
    commit(log, range(5))
    assert len(log.state_machine.image.topics) == 5
    assert log.leader_id() == 1 and log.epoch() >= 1
    status = log.status()
    assert status.state == "leader" and status.leader_id == 1
    assert status.high_watermark == log.state_machine.image.offset + 1
    assert status.tick_lag_seconds is not None and status.tick_lag_seconds < 0.5
    assert [voter.node_id for voter in log.membership.voters()] == [1]
    assert log.membership.addresses() == [log.settings.address]
    assert log.transport_closed_counts() == {}


def test_the_tick_counts_of_the_raft_process_cross_with_their_histogram(
        log: RaftProcessLog) -> None:
    first, first_at = log.ticks, time.monotonic()
    assert isinstance(first, TickReport) and first.stalls >= 0
    assert len(first.gap_counts) == len(TICK_GAP_BUCKETS)
    time.sleep(1.0)
    later, later_at = log.ticks, time.monotonic()
    counted = [b - a for a, b in zip(first.gap_counts, later.gap_counts, strict=True)]
    assert min(counted) >= 0
    assert sum(counted) > 5  # an idle node ticks every 50 ms or so (pysyncobj's poll)
    # The gaps between ticks tile the time between the two reads (give or take a gap at
    # either end), so their sum crossed too, not some other figure.
    assert later.gap_sum - first.gap_sum == pytest.approx(later_at - first_at, abs=0.3)


def test_a_refused_batch_is_an_outcome_and_an_apply_listener_hears_each_entry(
        log: RaftProcessLog) -> None:
    heard = threading.Semaphore(0)
    log.add_apply_listener(heard.release)
    commit(log, range(1))
    assert heard.acquire(timeout=5)
    (outcome,) = log.propose([batch([topic_record(9)], expected=0)]).result(10)
    assert outcome.status is not BatchStatus.COMMITTED  # offset 0 is taken: refused, not raised


def test_the_dump_is_written_here_and_a_restart_loads_it(tmp_path: Path) -> None:
    first = settings(tmp_path)
    log = RaftProcessLog(first)
    try:
        wait_until(log.is_leader, 10, "the one voter never led")
        commit(log, range(10))
        log.force_compaction()
        wait_until(lambda: log.dumps_written == 1, 10, "no dump written")
        commit(log, range(10, 12))  # after the dump: in the journal only
        before = log.state_machine.image
    finally:
        log.close()
    assert log.process.returncode == 0
    again = RaftProcessLog(first)
    try:
        wait_until(lambda: again.state_machine.image.offset == before.offset, 10,
                   "the restart did not get back to the same offset")
        assert again.state_machine.image.topics == before.topics
        assert not list((tmp_path / "raft").glob("dump.restore-*"))  # links removed once read
    finally:
        again.close()


def test_a_corrupt_journal_stops_the_start_with_the_check_s_message(tmp_path: Path) -> None:
    first = settings(tmp_path)
    log = RaftProcessLog(first)
    wait_until(log.is_leader, 10, "the one voter never led")
    commit(log, range(3))
    log.close()
    journal = tmp_path / "raft" / "journal"
    data = bytearray(journal.read_bytes())
    data[-20:] = b"\xff" * 20
    journal.write_bytes(bytes(data))
    with pytest.raises(RaftProcessError, match="journal"):
        RaftProcessLog(first)


def test_a_raft_process_killed_takes_this_process_down(tmp_path: Path) -> None:
    exited: list[int] = []
    done, never = threading.Event(), threading.Event()

    def exit_process(code: int) -> NoReturn:
        exited.append(code)
        done.set()
        while True:  # holds the reader thread (a daemon) where a real exit would end it all
            never.wait()

    log = RaftProcessLog(settings(tmp_path), exit_process=exit_process)
    try:
        wait_until(log.is_leader, 10, "the one voter never led")
        os.kill(log.process.pid, signal.SIGKILL)
        assert done.wait(10), "the API side never noticed its Raft process died"
        assert exited == [1]
        assert log.process.returncode == -signal.SIGKILL
    finally:
        log.close()
