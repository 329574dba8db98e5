"""Properties of the Raft journal on disk: whatever pysyncobj does to it, it reads back
as written; a flipped byte anywhere is refused naming its record; a log that is well framed but
wrong (a raised or lowered term, a duplicated or missing index) is refused by the log's checks.

A stateful test drives the journal stack a node runs (``DurableJournal`` over
``CheckedFileJournal``) through appends, follower truncations, compactions, snapshot installs and
commit indexes, reopening it from disk and damaging it along the way.
"""

from __future__ import annotations

import pickle
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from chunkraft.controller.raft import encode_entry
from chunkraft.controller.raft.checked_journal import (
    HEADER_SIZE,
    CheckedFileJournal,
    encode_journal,
    journal_records,
)
from chunkraft.controller.raft.durable_journal import DurableJournal
from chunkraft.controller.raft.journal_check import check_journal
from chunkraft.errors import JournalCorruptError
from tests.support.raft import batch, key, topic_record

NO_OP = b"\x01"


def _command(n: int) -> bytes:
    payload = encode_entry([batch([topic_record(n + k) for k in range(n % 4)], key_=key(n))])
    return b"\x00" + pickle.dumps((0, (payload,)), protocol=2)


COMMANDS = [NO_OP, *(_command(n) for n in range(8))]
Entry = tuple[bytes, int, int]


def _no_sync(fd: int) -> None:
    """The disk wait is not what these properties are about."""


class JournalOnDisk(RuleBasedStateMachine):
    """A model list of entries next to the real journal; every rule does both."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="chunkraft-journal-property-"))
        self.path = self.directory / "journal"
        self.journal = DurableJournal(CheckedFileJournal(self.path), str(self.path), _no_sync)
        self.model: list[Entry] = [(NO_OP, 1, 0)]  # what pysyncobj adds to an empty journal
        self.journal.add(*self.model[0])
        self.commit_index = 1
        self.journal.setRaftCommitIndex(1)

    def teardown(self) -> None:
        self.journal._destroy()
        shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def term(self) -> int:
        return self.journal.getCurrentTerm()

    def _new_term(self, raise_by: int) -> int:
        term = max(self.term, self.model[-1][2] if self.model else 0) + raise_by
        if term != self.term:
            self.journal.setCurrentTerm(term, None)  # durable before an entry of that term
        return term

    @rule(command=st.sampled_from(COMMANDS), raise_by=st.sampled_from([0, 0, 0, 1, 2]))
    def append(self, command: bytes, raise_by: int) -> None:
        term = self._new_term(raise_by)
        entry = (command, self.model[-1][1] + 1 if self.model else 1, term)
        self.journal.add(*entry)
        self.model.append(entry)

    @precondition(lambda self: len(self.model) > 1)
    @rule(data=st.data())
    def follower_truncation(self, data: st.DataObject) -> None:
        position = data.draw(st.integers(1, len(self.model) - 1))
        self.journal.deleteEntriesFrom(position)
        del self.model[position:]
        self.commit_index = min(self.commit_index, self.model[-1][1])
        self.journal.setRaftCommitIndex(self.commit_index)

    @precondition(lambda self: len(self.model) > 2)
    @rule(data=st.data())
    def compaction(self, data: st.DataObject) -> None:
        position = data.draw(st.integers(1, len(self.model) - 2))  # pysyncobj keeps two
        self.journal.deleteEntriesTo(position)
        self.model = self.model[position:]

    @rule(gap=st.integers(1, 1000), command=st.sampled_from(COMMANDS),
          raise_by=st.sampled_from([0, 1]))
    def snapshot_install(self, gap: int, command: bytes, raise_by: int) -> None:
        term = self._new_term(raise_by)
        previous = self.model[-1][1] + gap
        self.journal.clear()
        self.model = [(NO_OP, previous, term), (command, previous + 1, term)]
        for entry in self.model:
            self.journal.add(*entry)

    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        self.commit_index = data.draw(st.integers(1, self.model[-1][1]))
        self.journal.setRaftCommitIndex(self.commit_index)

    @rule()
    def reopen(self) -> None:
        self.journal._destroy()
        check = check_journal(self.path, current_term=self.term)
        assert (check.first_index, check.last_index) == (self.model[0][1], self.model[-1][1])
        self.journal = DurableJournal(CheckedFileJournal(self.path), str(self.path), _no_sync)
        assert [self.journal[i] for i in range(len(self.journal))] == self.model
        assert self.journal.getRaftCommitIndex() == self.commit_index

    @rule(data=st.data(), mask=st.integers(1, 255))
    def a_flipped_byte_is_refused_at_start(self, data: st.DataObject, mask: int) -> None:
        self.journal._destroy()
        original = self.path.read_bytes()
        records = list(journal_records(original, str(self.path)))
        end = records[-1].position + 24 + len(records[-1].command)
        at = data.draw(st.integers(0, end - 1), label="flipped byte")
        damaged = bytearray(original)
        damaged[at] ^= mask
        self.path.write_bytes(bytes(damaged))
        for start in (lambda: check_journal(self.path, current_term=self.term),
                      lambda: CheckedFileJournal(self.path)):
            with pytest.raises(JournalCorruptError) as error:
                start()
            assert error.value.path == str(self.path)
            if at >= HEADER_SIZE:  # inside a record: that record is named, by its index
                record = next(r for r in reversed(records) if r.position <= at)
                assert error.value.position == record.position
                assert f"Raft index {record.index}" in str(error.value)
        self.path.write_bytes(original)
        self.journal = DurableJournal(CheckedFileJournal(self.path), str(self.path), _no_sync)

    @invariant()
    def the_log_is_the_model(self) -> None:
        assert len(self.journal) == len(self.model)
        assert self.journal[-1] == self.model[-1]


JournalOnDisk.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_the_journal_on_disk_is_what_was_written = JournalOnDisk.TestCase


# ------------------------------------------------ well framed but wrong: the log's own checks


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[Entry], int]:
    """A well-formed log (consecutive indexes, terms never decreasing) and the node's stored
    term (at least the last entry's)."""
    first = draw(st.integers(1, 10_000))
    term = draw(st.integers(0, 100))
    entries = []
    for index in range(first, first + draw(st.integers(3, 20))):
        term += draw(st.sampled_from([0, 0, 0, 1, 5]))
        entries.append((draw(st.sampled_from(COMMANDS)), index, term))
    return entries, term + draw(st.integers(0, 3))


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@PROPERTY
@given(log=logs())
def test_a_well_formed_log_passes(log: tuple[list[Entry], int], tmp_path: Path) -> None:
    entries, stored = log
    path = tmp_path / "journal"
    path.write_bytes(encode_journal(entries))
    assert check_journal(path, current_term=stored).entries == len(entries)


@PROPERTY
@given(log=logs(), data=st.data())
def test_a_raised_or_lowered_term_is_refused(
    log: tuple[list[Entry], int], data: st.DataObject, tmp_path: Path
) -> None:
    """Every record CRC good: a term raised above the stored term (or above a later entry's),
    or lowered below the entry before it, is still refused, naming the index."""
    entries, stored = log
    n = data.draw(st.integers(0, len(entries) - 1))
    command, index, _term = entries[n]
    if n > 0 and entries[n - 1][2] > 0 and data.draw(st.booleans(), label="lowered"):
        changed = data.draw(st.integers(0, entries[n - 1][2] - 1))
    else:
        changed = data.draw(st.integers(stored + 1, 2**64 - 1))
    entries[n] = (command, index, changed)
    path = tmp_path / "journal"
    path.write_bytes(encode_journal(entries))
    with pytest.raises(JournalCorruptError, match=f"Raft index {index} "):
        check_journal(path, current_term=stored)


@PROPERTY
@given(log=logs(), data=st.data(), duplicate=st.booleans())
def test_a_duplicated_or_missing_index_is_refused(
    log: tuple[list[Entry], int], data: st.DataObject, duplicate: bool, tmp_path: Path
) -> None:
    entries, stored = log
    n = data.draw(st.integers(1, len(entries) - 2))
    if duplicate:
        entries.insert(n, entries[n])
        follows, index = entries[n][1], entries[n][1]
    else:
        follows, index = entries[n - 1][1], entries[n + 1][1]
        del entries[n]
    path = tmp_path / "journal"
    path.write_bytes(encode_journal(entries))
    with pytest.raises(JournalCorruptError, match=f"Raft index {index} follows index {follows}"):
        check_journal(path, current_term=stored)
