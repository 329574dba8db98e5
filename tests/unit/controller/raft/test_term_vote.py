"""term_vote: Raft's term and vote stored with a CRC and fsynced; damage is refused, not reset."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from chunkraft.controller.raft import term_vote
from chunkraft.controller.raft.term_vote import (
    TermVote,
    load_term_vote,
    read_term_vote,
    store_term_vote,
    term_vote_path,
)
from chunkraft.errors import JournalCorruptError

# pysyncobj 0.3.17 leaves files to the garbage collector (MetaStorer.getMeta reads journal.meta
# with open(...).read()).
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.mark.parametrize("value", [TermVote(0, None), TermVote(7, "127.0.0.1:9001"),
                                   TermVote(2**63, "")])
def test_a_stored_term_and_vote_reads_back(tmp_path: Path, value: TermVote) -> None:
    path = tmp_path / "journal.term"
    store_term_vote(path, value)
    assert read_term_vote(path) == value
    assert not (tmp_path / "journal.term.tmp").exists()


def test_a_missing_file_is_none(tmp_path: Path) -> None:
    assert read_term_vote(tmp_path / "journal.term") is None


def test_every_flipped_byte_is_refused_never_reset(tmp_path: Path) -> None:
    path = tmp_path / "journal.term"
    store_term_vote(path, TermVote(12, "127.0.0.1:9002"))
    original = path.read_bytes()
    for where in range(len(original)):
        for bit in (0x01, 0x80):
            data = bytearray(original)
            data[where] ^= bit
            path.write_bytes(bytes(data))
            with pytest.raises(JournalCorruptError, match="vote"):
                read_term_vote(path)


@pytest.mark.parametrize("keep", [0, 5, 15, -1])
def test_a_torn_file_is_refused(tmp_path: Path, keep: int) -> None:
    path = tmp_path / "journal.term"
    store_term_vote(path, TermVote(3, "127.0.0.1:9003"))
    path.write_bytes(path.read_bytes()[:keep])
    with pytest.raises(JournalCorruptError) as caught:
        read_term_vote(path)
    assert str(path) in str(caught.value) and "refusing to start" in str(caught.value)


def test_store_is_durable_before_it_returns(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_fsync, real_replace = term_vote.os.fsync, term_vote.os.replace
    monkeypatch.setattr(term_vote.os, "fsync",
                        lambda fd: (events.append("fsync file"), real_fsync(fd))[1])
    monkeypatch.setattr(term_vote.os, "replace",
                        lambda a, b: (events.append("rename"), real_replace(a, b))[1])
    monkeypatch.setattr(term_vote, "fsync_directory",
                        lambda directory: events.append("fsync directory"))
    store_term_vote(tmp_path / "journal.term", TermVote(1, None))
    assert events == ["fsync file", "rename", "fsync directory"]


def _write_meta(journal: Path, meta: dict[str, object]) -> None:
    Path(f"{journal}.meta").write_bytes(pickle.dumps(meta, protocol=2))


def test_load_prefers_the_term_file_over_pysyncobjs_meta(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    _write_meta(journal, {"currentTerm": 1, "votedForNodeId": None})
    store_term_vote(term_vote_path(journal), TermVote(5, "127.0.0.1:9001"))
    assert load_term_vote(journal) == (TermVote(5, "127.0.0.1:9001"), False)
    # A flipped byte in journal.meta, which pysyncobj silently reads as term 0, changes nothing.
    meta = Path(f"{journal}.meta")
    data = bytearray(meta.read_bytes())
    data[len(data) // 2] ^= 0xFF
    meta.write_bytes(bytes(data))
    assert load_term_vote(journal) == (TermVote(5, "127.0.0.1:9001"), False)


def test_load_takes_an_older_nodes_meta_once(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    assert load_term_vote(journal) == (TermVote(0, None), True)
    _write_meta(journal, {"currentTerm": 4, "votedForNodeId": "127.0.0.1:9002",
                          "raftCommitIndex": 9})
    assert load_term_vote(journal) == (TermVote(4, "127.0.0.1:9002"), True)


@pytest.mark.parametrize("damage", [b"", b"\x80\x02}q\x00(X", b"garbage",
                                    pickle.dumps({"currentTerm": "x"}, protocol=2),
                                    pickle.dumps(Path("x"), protocol=2)])
def test_an_unreadable_meta_without_a_term_file_is_refused(tmp_path: Path,
                                                           damage: bytes) -> None:
    journal = tmp_path / "journal"
    Path(f"{journal}.meta").write_bytes(damage)
    with pytest.raises(JournalCorruptError, match="term and vote are unknown"):
        load_term_vote(journal)
