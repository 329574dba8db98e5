"""Raft's term and vote on disk: CRC'd, fsynced and renamed before anything depends on them.

pysyncobj 0.3.17 keeps ``currentTerm`` and ``votedFor`` in ``journal.meta``, a pickle written
with a rename but no fsync, read back with a bare ``except`` that turns any damage into
"term 0, no vote". Raft needs both to survive a crash *before* a message that depends on them
leaves the node (Figure 2, "Persistent state ... updated on stable storage before responding to
RPCs"); a node that forgets its vote can vote twice in one term and elect two leaders.

This module stores them in ``<journal>.term`` instead::

    "CRTV0001" | u32 body_length | u32 crc32c(body) | body
    body = u64 term | u16 vote_length (0xFFFF: no vote) | vote (UTF-8 node id)

written to ``<journal>.term.tmp``, fsynced, renamed over the old file, and the directory
fsynced; only then does :func:`store_term_vote` return. A file whose magic, length or CRC is
wrong is refused (:class:`~chunkraft.errors.JournalCorruptError`), never reset. A node that has
no ``.term`` file yet (created by an older chunkraft) takes its term and vote from
``journal.meta`` once, refusing to start if that file exists but cannot be read.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crc32c import crc32c

from chunkraft.errors import JournalCorruptError
from chunkraft.records.files._fsync import fsync_directory

__all__ = ["TermVote", "load_term_vote", "read_term_vote", "store_term_vote", "term_vote_path"]

_MAGIC = b"CRTV0001"
_HEADER = struct.Struct("<II")  # body length, crc32c(body)
_TERM_AND_LENGTH = struct.Struct("<QH")
_NO_VOTE = 0xFFFF
_MAX_VOTE_BYTES = 1024  # a node id is a host:port; anything longer is damage


@dataclass(frozen=True, slots=True)
class TermVote:
    """Raft's persistent ``currentTerm`` and ``votedFor`` (pysyncobj's node id, or None)."""

    term: int
    voted_for: str | None


def term_vote_path(journal_path: str | os.PathLike[str]) -> Path:
    """Where the term and vote of the journal at ``journal_path`` are stored."""
    return Path(f"{os.fspath(journal_path)}.term")


def encode_term_vote(value: TermVote) -> bytes:
    """The file's bytes for ``value``."""
    vote = b"" if value.voted_for is None else value.voted_for.encode()
    if len(vote) > _MAX_VOTE_BYTES:
        raise ValueError(f"a node id of {len(vote)} bytes is too long to store")
    body = _TERM_AND_LENGTH.pack(value.term, _NO_VOTE if value.voted_for is None else len(vote))
    body += vote
    return _MAGIC + _HEADER.pack(len(body), crc32c(body)) + body


def read_term_vote(path: str | os.PathLike[str]) -> TermVote | None:
    """The stored term and vote, or None if ``path`` does not exist.

    Raises :class:`JournalCorruptError` naming the file and byte if it is torn or damaged.
    """
    label = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    start = len(_MAGIC) + _HEADER.size
    if len(data) < start or data[: len(_MAGIC)] != _MAGIC:
        raise JournalCorruptError(
            "the Raft term/vote file does not start with its magic: refusing to start, since "
            "forgetting a vote could let this node vote twice in one term", label, 0)
    length, crc = _HEADER.unpack_from(data, len(_MAGIC))
    body = data[start:]
    if length != len(body) or crc32c(body) != crc:
        raise JournalCorruptError(
            f"the Raft term/vote file fails its CRC or length check ({len(body)} body bytes, "
            f"{length} expected): refusing to start, since forgetting a vote could let this "
            "node vote twice in one term", label, len(_MAGIC))
    if length < _TERM_AND_LENGTH.size:
        raise JournalCorruptError("the Raft term/vote body is too short", label, start)
    term, vote_length = _TERM_AND_LENGTH.unpack_from(body, 0)
    vote = body[_TERM_AND_LENGTH.size :]
    if vote_length == _NO_VOTE and not vote:
        return TermVote(term, None)
    if vote_length != len(vote):
        raise JournalCorruptError("the Raft vote's length differs from its bytes", label, start)
    try:
        return TermVote(term, vote.decode())
    except UnicodeDecodeError as error:
        raise JournalCorruptError(f"the Raft vote is not UTF-8: {error}", label, start) from error


def store_term_vote(path: str | os.PathLike[str], value: TermVote) -> None:
    """Writes ``value`` to ``path`` durably: returns only once a crash or power loss would keep
    it (file fsynced, renamed over the old one, directory fsynced)."""
    target = Path(path)
    temporary = target.with_name(target.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, encode_term_vote(value))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, target)
    fsync_directory(target.parent)


class _DataOnlyUnpickler(pickle.Unpickler):
    """pysyncobj's meta is a dict of plain values: a pickle naming any class is damage."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"journal.meta refers to {module}.{name}")


def _from_pysyncobj_meta(path: Path) -> TermVote:
    """The term and vote pysyncobj stored in ``journal.meta`` (term 0, no vote if absent)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return TermVote(0, None)
    try:
        meta = _DataOnlyUnpickler(io.BytesIO(data)).load()
        term = meta.get("currentTerm", 0)
        vote = meta.get("votedForNodeId")
        if type(term) is not int or not (vote is None or isinstance(vote, str)):
            raise ValueError(f"term {term!r}, vote {vote!r}")
    except Exception as error:  # a damaged pickle raises almost anything
        raise JournalCorruptError(
            f"pysyncobj's journal.meta cannot be read ({error!r}) and there is no term/vote file "
            "yet: this node's Raft term and vote are unknown, so it refuses to start rather than "
            "risk voting twice in one term. Wipe this node's raft/ directory to rejoin as a new "
            "follower, if the other voters hold a majority", str(path), 0) from error
    return TermVote(term, vote)


def load_term_vote(journal_path: str | os.PathLike[str]) -> tuple[TermVote, bool]:
    """The term and vote of the journal at ``journal_path``, and whether they came from
    pysyncobj's ``journal.meta`` (so are not yet in a ``.term`` file). Raises
    :class:`JournalCorruptError` if the stored values cannot be trusted."""
    stored = read_term_vote(term_vote_path(journal_path))
    if stored is not None:
        return stored, False
    return _from_pysyncobj_meta(Path(f"{os.fspath(journal_path)}.meta")), True
