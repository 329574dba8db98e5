"""Properties of the log store against a simple in-memory model.

A log driven by random leader appends, follower appends that leave gaps, truncations at batch
boundaries, rolls and reopens (clean or after a crash) holds exactly the batches the model holds;
and cutting the .log file at any byte keeps every whole batch before the cut.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from chunkraft.broker_agent.storage import DuplicateSequenceError, LogConfig, UnifiedLog
from chunkraft.dataplane.record_batch import build_batch, decode_records, iter_batches
from chunkraft.error_codes import ApiException, Errors

TOPIC = uuid.UUID("3b8f2f3c-1d0c-4a7e-9c55-6a2f1f0d9e11")
TXN_PID = 3
CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=200)


def records_of(data: bytes) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for _h, v in iter_batches(data) for r in decode_records(v)]


@dataclass
class Batch:
    base: int
    values: list[bytes] = field(default_factory=list)
    producer_id: int = -1
    sequence: int = -1
    transactional: bool = False
    marker: bool | None = None  # True: COMMIT, False: ABORT (a control batch, no values)

    @property
    def next(self) -> int:
        return self.base + max(len(self.values), 1)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="A2_prop_", dir="/tmp"))
        self.path = self.tmp / "t-0"
        self.log = UnifiedLog.open(self.path, TOPIC, CONFIG, now_ms=lambda: 0)
        self.batches: list[Batch] = []
        self.leo = 0
        self.counter = 0

    def teardown(self) -> None:
        self.log.close_files()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _values(self, n: int, size: int) -> list[bytes]:
        out = []
        for _ in range(n):
            self.counter += 1
            out.append(b"%d:" % self.counter + b"x" * size)
        return out

    @rule(n=st.integers(1, 5), size=st.integers(0, 120), epoch=st.integers(0, 3))
    def append_leader(self, n: int, size: int, epoch: int) -> None:
        values = self._values(n, size)
        data = build_batch([(None, v, 1000) for v in values])
        info = self.log.append_as_leader(data, epoch)
        assert info.first_offset == self.leo
        self.batches.append(Batch(self.leo, values))
        self.leo += n

    @rule(n=st.integers(1, 5), gap=st.integers(0, 30), size=st.integers(0, 120))
    def append_follower(self, n: int, gap: int, size: int) -> None:
        values = self._values(n, size)
        base = self.leo + gap
        data = build_batch([(None, v, 1000) for v in values], base_offset=base)
        self.log.append_as_follower(data)
        self.batches.append(Batch(base, values))
        self.leo = base + n

    @precondition(lambda self: bool(self.batches))
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from([b.base for b in self.batches]))
        self.log.truncate_to(target)
        self.batches = [b for b in self.batches if b.base < target]
        self.leo = self.batches[-1].next if self.batches else target

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(crash=st.booleans())
    def reopen(self, crash: bool) -> None:
        if crash:
            self.log.close_files()
        else:
            self.log.close()
        self.log = UnifiedLog.open(self.path, TOPIC, CONFIG, now_ms=lambda: 0)

    # ---------------------------------------------------------------- producers and transactions

    def _data_batches(self, pid: int) -> list[Batch]:
        return [b for b in self.batches if b.producer_id == pid and b.marker is None]

    def _next_sequence(self, pid: int) -> int:
        mine = self._data_batches(pid)
        return mine[-1].sequence + len(mine[-1].values) if mine else 0

    def _open_txn(self) -> int | None:
        first: int | None = None
        for b in self.batches:
            if b.producer_id != TXN_PID:
                continue
            if b.marker is not None:
                first = None
            elif b.transactional and first is None:
                first = b.base
        return first

    def _aborted(self) -> list[tuple[int, int]]:
        out = []
        first: int | None = None
        for b in self.batches:
            if b.producer_id != TXN_PID:
                continue
            if b.marker is not None:
                if b.marker is False:
                    out.append((TXN_PID, first if first is not None else b.base))
                first = None
            elif b.transactional and first is None:
                first = b.base
        return out

    def _produce(self, pid: int, n: int, transactional: bool) -> None:
        values = self._values(n, 10)
        seq = self._next_sequence(pid)
        data = build_batch(
            [(None, v, 1000) for v in values],
            producer_id=pid,
            producer_epoch=0,
            base_sequence=seq,
            transactional=transactional,
        )
        info = self.log.append_as_leader(data, max(self.log.latest_epoch, 0))
        assert info.first_offset == self.leo
        self.batches.append(Batch(self.leo, values, pid, seq, transactional))
        self.leo += n

    @rule(pid=st.sampled_from([1, 2]), n=st.integers(1, 4))
    def idempotent_append(self, pid: int, n: int) -> None:
        self._produce(pid, n, False)

    @precondition(lambda self: self._open_txn() is None)
    @rule(n=st.integers(1, 4))
    def transactional_append_non_txn_ok(self, n: int) -> None:
        self._produce(TXN_PID, n, False)

    @rule(n=st.integers(1, 4))
    def transactional_append(self, n: int) -> None:
        self._produce(TXN_PID, n, True)

    @precondition(lambda self: self._open_txn() is not None)
    @rule(commit=st.booleans())
    def end_transaction(self, commit: bool) -> None:
        info = self.log.append_control(commit, TXN_PID, 0, 0, max(self.log.latest_epoch, 0), 5)
        assert info.first_offset == self.leo
        self.batches.append(Batch(self.leo, [], TXN_PID, marker=commit))
        self.leo += 1

    @precondition(lambda self: bool(self._data_batches(1)))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        mine = self._data_batches(1)
        back = data.draw(st.integers(1, min(len(mine), 7)))
        old = mine[-back]
        again = build_batch(
            [(None, v, 1000) for v in old.values],
            producer_id=1,
            producer_epoch=0,
            base_sequence=old.sequence,
        )
        if back <= 5:
            with pytest.raises(DuplicateSequenceError) as dup:
                self.log.append_as_leader(again, 0)
            assert (dup.value.first_offset, dup.value.last_offset) == (old.base, old.next - 1)
        else:
            with pytest.raises(ApiException) as e:
                self.log.append_as_leader(again, 0)
            assert e.value.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert self.log.log_end_offset == self.leo

    @invariant()
    def producer_state_as_model(self) -> None:
        log = self.log
        for pid in (1, 2, TXN_PID):
            entry = log.producer_state(pid)
            mine = self._data_batches(pid)
            if mine:
                assert entry is not None
                assert entry.last_sequence == self._next_sequence(pid) - 1
        log.update_high_watermark(log.log_end_offset)
        assert log.first_unstable_offset() == self._open_txn()
        got = log.aborted_transactions(log.log_start_offset, log.log_end_offset)
        assert [tuple(t) for t in got] == self._aborted()

    @invariant()
    def same_as_model(self) -> None:
        log = self.log
        assert log.log_end_offset == self.leo
        expected = [(b.base + i, v) for b in self.batches for i, v in enumerate(b.values)]
        # A marker's value: version int16 0, coordinator epoch int32 0.
        expected += [(b.base, bytes(6)) for b in self.batches if b.marker is not None]
        expected.sort(key=lambda r: r[0])
        start = log.log_start_offset
        got = records_of(log.read(start, 10**9, 10**9).records)
        assert got == expected
        if self.batches:
            assert start <= self.batches[0].base
        assert [s.base_offset for s in log.segments] == sorted(s.base_offset for s in log.segments)
        for b in self.batches[-3:]:
            mid = b.base + len(b.values) // 2 if b.values else b.base
            first = log.read(mid, 1, 10**9).first_offset
            assert first == b.base


TestLogMachine = LogMachine.TestCase
TestLogMachine.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 300)), min_size=1, max_size=12),
    cut_fraction=st.floats(0, 1),
    clean=st.booleans(),
)
def test_cut_log_file_keeps_whole_batches(
    sizes: list[tuple[int, int]], cut_fraction: float, clean: bool
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="A2_cut_", dir="/tmp"))
    try:
        path = tmp / "t-0"
        config = LogConfig(index_interval_bytes=256)
        log = UnifiedLog.open(path, TOPIC, config, now_ms=lambda: 0)
        ends: list[tuple[int, int]] = []  # (byte end, offset end) of each batch
        pos = 0
        for n, size in sizes:
            data = build_batch([(b"k", b"v" * size, 5)] * n)
            info = log.append_as_leader(data, 0)
            pos += len(data)
            ends.append((pos, info.last_offset + 1))
        if clean:
            log.close()
        else:
            log.close_files()
        segment = path / f"{0:020d}.log"
        cut = int(pos * cut_fraction)
        with segment.open("r+b") as f:
            f.truncate(cut)
        kept = [e for e in ends if e[0] <= cut]
        again = UnifiedLog.open(path, TOPIC, config, now_ms=lambda: 0)
        expected_leo = kept[-1][1] if kept else 0
        assert again.log_end_offset == expected_leo
        got = records_of(again.read(0, 10**9, 10**9).records) if expected_leo else []
        assert [o for o, _v in got] == list(range(expected_leo))
        assert segment.stat().st_size == (kept[-1][0] if kept else 0)
        again.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
