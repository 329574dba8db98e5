"""ConflictOnlyJournal truncates pysyncobj's journal only where Raft says to."""

from __future__ import annotations

from pysyncobj.journal import MemoryJournal

from chunkraft.controller.raft.safe_journal import ConflictOnlyJournal


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
