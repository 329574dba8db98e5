"""ConflictOnlyJournal truncates pysyncobj's journal only where Raft says to."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pysyncobj.journal import MemoryJournal

from chunkraft.controller.raft.safe_journal import (
    AppliedEntryTruncationError,
    ConflictOnlyJournal,
)


def _journal(terms: list[int], current_term: int) -> ConflictOnlyJournal:
    inner = MemoryJournal()
    for index, term in enumerate(terms, start=1):
        inner.add(b"x%d" % index, index, term)
    inner.setCurrentTerm(current_term, None)
    return ConflictOnlyJournal(inner)


def _indexes_and_terms(journal: ConflictOnlyJournal) -> list[tuple[int, int]]:
    return [(journal[i][1], journal[i][2]) for i in range(len(journal))]


def test_a_repeated_message_with_fewer_entries_keeps_acknowledged_entries() -> None:
    # pysyncobj alone: prevLogIdx 2 deletes 3..5, then re-adds only 3: entries 4 and 5, which
    # this follower had acknowledged, would be gone.
    journal = _journal([1, 1, 1, 1, 1], current_term=1)
    journal.deleteEntriesFrom(2)
    journal.add(b"x3", 3, 1)
    assert _indexes_and_terms(journal) == [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1)]


def test_a_heartbeat_with_an_old_prev_index_truncates_nothing() -> None:
    journal = _journal([1, 1, 1, 1], current_term=1)
    journal.deleteEntriesFrom(1)
    assert len(journal) == 4


def test_a_conflicting_entry_truncates_from_itself() -> None:
    journal = _journal([1, 1, 1, 1, 1], current_term=2)
    journal.deleteEntriesFrom(2)
    journal.add(b"x3", 3, 1)  # matches
    journal.add(b"y4", 4, 2)  # conflicts: 4 and 5 go, the new 4 comes
    assert _indexes_and_terms(journal) == [(1, 1), (2, 1), (3, 1), (4, 2)]
    assert journal[3][0] == b"y4"


def test_entries_after_the_message_of_an_older_term_are_dropped() -> None:
    # They might conflict with the new leader's log, and pysyncobj commits up to its last index.
    journal = _journal([1, 1, 1, 1, 1], current_term=2)
    journal.deleteEntriesFrom(2)
    journal.add(b"x3", 3, 1)
    assert _indexes_and_terms(journal) == [(1, 1), (2, 1), (3, 1)]


def test_entries_after_the_message_of_the_current_term_are_kept() -> None:
    journal = _journal([1, 2, 2, 2], current_term=2)
    journal.deleteEntriesFrom(1)
    journal.add(b"x2", 2, 2)
    assert len(journal) == 4


def test_appending_past_the_end_just_appends() -> None:
    journal = _journal([1, 1], current_term=1)
    journal.deleteEntriesFrom(2)
    journal.add(b"x3", 3, 1)
    journal.add(b"x4", 4, 1)
    assert _indexes_and_terms(journal) == [(1, 1), (2, 1), (3, 1), (4, 1)]


def test_leader_appends_are_untouched() -> None:
    journal = _journal([1], current_term=3)
    journal.add(b"x2", 2, 3)
    assert _indexes_and_terms(journal) == [(1, 1), (2, 3)]


def test_other_calls_reach_the_wrapped_journal() -> None:
    journal = _journal([1], current_term=1)
    journal.setCurrentTerm(4, "node-2")
    assert (journal.getCurrentTerm(), journal.getVotedForNodeId()) == (4, "node-2")


# ---------------------------------------------------------------- applied entries


def _applied_journal(applied: int, current_term: int) -> tuple[ConflictOnlyJournal, list[Any]]:
    journal = _journal([1, 1, 1, 1, 1], current_term=current_term)
    journal.last_applied = lambda: applied
    stops: list[Any] = []

    def stop(first_index: int, why: str) -> None:
        stops.append((first_index, why))
        raise _Stopped

    journal.on_applied_truncation = stop
    return journal, stops


class _Stopped(Exception):
    """What the test's fail-stop raises instead of ending the process."""


def test_a_conflict_with_an_applied_entry_stops_and_truncates_nothing(
    caplog: pytest.LogCaptureFixture
) -> None:
    # As once: a leader elected on a corrupt term sent entry 4 of term 71776119061217291.
    journal, stops = _applied_journal(applied=4, current_term=71776119061217291)
    journal.deleteEntriesFrom(2)
    journal.add(b"x3", 3, 1)
    with pytest.raises(_Stopped):
        journal.add(b"bad", 4, 71776119061217291)
    assert stops == [(4, "entry 4 of term 71776119061217291 conflicts with term 1")]
    assert _indexes_and_terms(journal) == [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1)]
    assert [r.levelname for r in caplog.records] == ["CRITICAL"]
    assert "applied Raft index 4" in caplog.text and "stopping instead" in caplog.text


def test_without_a_fail_stop_a_conflict_with_an_applied_entry_raises() -> None:
    journal = _journal([1, 1, 1], current_term=2)
    journal.last_applied = lambda: 3
    journal.deleteEntriesFrom(1)
    with pytest.raises(AppliedEntryTruncationError) as error:
        journal.add(b"y2", 2, 2)
    assert error.value.first_index == 2
    assert _indexes_and_terms(journal) == [(1, 1), (2, 1), (3, 1)]


def test_a_conflict_past_the_applied_entries_truncates_as_before() -> None:
    journal, stops = _applied_journal(applied=3, current_term=2)
    journal.deleteEntriesFrom(3)
    journal.add(b"y4", 4, 2)
    assert stops == []
    assert _indexes_and_terms(journal) == [(1, 1), (2, 1), (3, 1), (4, 2)]


def test_applied_entries_after_the_message_are_kept_whatever_their_term() -> None:
    # Applied means committed: the new leader holds them at the same index and term.
    journal, stops = _applied_journal(applied=4, current_term=2)
    journal.deleteEntriesFrom(1)
    journal.add(b"x2", 2, 1)
    assert _indexes_and_terms(journal) == [(1, 1), (2, 1), (3, 1), (4, 1)]  # 5 is not applied
    assert stops == []


@settings(max_examples=200, deadline=None)
@given(terms=st.lists(st.integers(1, 4), min_size=1, max_size=8).map(sorted),
       applied=st.integers(0, 8), prev=st.integers(0, 8),
       sent=st.lists(st.integers(1, 6), max_size=6).map(sorted), current=st.integers(4, 6))
def test_no_message_ever_removes_an_applied_entry(
    terms: list[int], applied: int, prev: int, sent: list[int], current: int
) -> None:
    """Any AppendEntries (a prevLogIdx, then entries of any terms): either the journal keeps
    every applied entry as it was, or the fail-stop is called and nothing is truncated."""
    applied = min(applied, len(terms))
    prev = min(prev, len(terms))
    journal = _journal(terms, current_term=current)
    journal.last_applied = lambda: applied
    stopped: list[int] = []

    def stop(first_index: int, why: str) -> None:
        stopped.append(first_index)
        raise _Stopped

    journal.on_applied_truncation = stop
    before = _indexes_and_terms(journal)
    journal.deleteEntriesFrom(prev)
    try:
        for offset, term in enumerate(sent):
            journal.add(b"m", prev + 1 + offset, max(term, terms[-1]) if offset else term)
    except _Stopped:
        assert _indexes_and_terms(journal) == before
        assert stopped and stopped[0] <= applied
        return
    after = _indexes_and_terms(journal)
    assert len(after) >= applied and after[:applied] == before[:applied]
