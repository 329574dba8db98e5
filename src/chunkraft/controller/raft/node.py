"""RaftNode: the controller's Raft log on pysyncobj. The only module that builds a SyncObj.

Settings follow what we measured (``../shared/PYSYNCOBJ.md``): a journal and a dump file always,
our own dump format (no pickle, no fork), no append batching, short election timeouts on a LAN,
the password always, bound to the configured address only, and commands that fail at once when
there is no leader rather than queue for ever. Its transport is pysyncobj's, guarded against
peers that have not authenticated (``transport_guard.py``); the tick thread records when it
last ticked, so readiness can tell a stalled Raft thread (``QuorumStatus.tick_lag_seconds``).

One replicated method, ``commit_batches(payload)``, is the only command ever written to the
journal besides pysyncobj's no-ops and membership changes (``membership.py``); pysyncobj
numbers replicated methods by their sorted names, so there must never be a second one. It never
raises: the state machine returns errors as values.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pysyncobj.syncobj as _pysyncobj_syncobj
from pysyncobj import (
    SERIALIZER_STATE,
    SyncObjConf,
    SyncObjConsumer,
    replicated,
)

from chunkraft.controller.raft.callbacks import settle
from chunkraft.controller.raft.checked_journal import CheckedFileJournal, convert_format_1
from chunkraft.controller.raft.clock import raft_clock
from chunkraft.controller.raft.dump import DumpHeader, read_dump_header
from chunkraft.controller.raft.dump_files import (
    clean_dump_leftovers,
    export_dump,
    install_next_dump,
    next_dump_path,
    place_placeholder,
)
from chunkraft.controller.raft.durable_journal import DurableJournal
from chunkraft.controller.raft.durable_syncobj import DurableSyncObj
from chunkraft.controller.raft.entry import (
    MAX_EPOCH,
    ProposedBatch,
)
from chunkraft.controller.raft.image_host import (
    DumpRequest,
    DumpWritten,
    ImageHost,
    InProcessImageHost,
)
from chunkraft.controller.raft.journal_check import check_dump, check_journal
from chunkraft.controller.raft.journal_file import prepare_journal_file
from chunkraft.controller.raft.leadership_watch import LeadershipWatch
from chunkraft.controller.raft.log import (
    QuorumStatus,
    TickWatch,
    VoterStatus,
    encode_proposal,
)
from chunkraft.controller.raft.membership import (
    JOINING_MARKER,
    QuorumMembership,
    VoterDirectory,
    peer_progress,
)
from chunkraft.controller.raft.safe_journal import EXIT_APPLIED_TRUNCATION, ConflictOnlyJournal
from chunkraft.controller.raft.state_machine import BatchOutcome, MetadataStateMachine
from chunkraft.controller.raft.term_vote import load_term_vote, term_vote_path
from chunkraft.controller.raft.transport_guard import (
    APPEND_ENTRIES_BATCH_BYTES,
    TransportLimits,
    guarded_transport,
)
from chunkraft.records.files._fsync import fsync_directory, fsync_file

__all__ = ["RaftNode", "RaftSettings"]

logger = logging.getLogger(__name__)

_STATES = {0: "follower", 1: "candidate", 2: "leader"}


def _conflict_only_journal(path: str | None) -> Any:
    if path is None:
        return ConflictOnlyJournal(_create_journal(path))
    return ConflictOnlyJournal(DurableJournal(CheckedFileJournal(path), path))


# Every SyncObj of this process gets a journal that truncates only on a conflict, as Raft does
# (see safe_journal.py for what pysyncobj does instead and why it can lose acknowledged entries),
# and, on disk, chunkraft's journal file with a CRC over every record (checked_journal.py) that
# stores term and vote durably with a CRC and syncs on demand (durable_journal.py).
_create_journal = _pysyncobj_syncobj.createJournal
_pysyncobj_syncobj.createJournal = _conflict_only_journal


class _DropMisleadingTruncationWarning(logging.Filter):
    """pysyncobj logs a truncation of applied entries before calling the journal, which (with
    ConflictOnlyJournal) truncates nothing unless there is a real conflict, and says so itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("truncating already-applied log entries")


logging.getLogger("pysyncobj.syncobj").addFilter(_DropMisleadingTruncationWarning())


@dataclass(frozen=True, slots=True)
class RaftSettings:
    """Everything the Raft node needs; times in seconds."""

    node_id: int
    voters: dict[int, str]
    """Node id -> ``host:port`` of every voter, this node included."""
    data_dir: Path
    password: str
    cluster_id: uuid.UUID
    election_timeout_min: float = 0.2
    election_timeout_max: float = 0.5
    append_entries_period: float = 0.05
    connection_retry: float = 0.5
    leader_fallback_timeout: float = 1.5
    log_compaction_min_entries: int = 50_000
    log_compaction_min_time: float = 300.0
    log_compaction_max_bytes: int = 256 * 1024 * 1024
    """Entries' bytes after which a dump is forced whatever their count: pysyncobj compacts by
    count and time only, and a restart reads (and checks) the whole journal."""
    max_retained_bytes: int = 64 * 1024 * 1024
    snapshot_export_dir: Path | None = None
    """Where each new dump is exported as Parquet (``docs/export.md``); None: never."""
    snapshot_export_retain: int = 3
    transport: TransportLimits = field(default_factory=TransportLimits)
    """Limits on Raft connections and messages (``transport_guard.py``)."""

    @property
    def address(self) -> str:
        return self.voters[self.node_id]

    @property
    def journal_path(self) -> Path:
        return self.data_dir / "raft" / "journal"

    @property
    def dump_path(self) -> Path:
        return self.data_dir / "raft" / "dump"

    @property
    def joining_marker_path(self) -> Path:
        """Present while this node, formatted to join a running quorum, has not yet heard
        from its leader (``membership.py``)."""
        return self.data_dir / "raft" / JOINING_MARKER


class _EntryPoint(SyncObjConsumer):  # type: ignore[misc]
    """Holds the one replicated method; built before the SyncObj, as pysyncobj requires."""

    def __init__(self, apply: Callable[[bytes], Any]) -> None:
        self._apply = apply
        super().__init__()

    @replicated  # type: ignore[untyped-decorator]
    def commit_batches(self, payload: bytes) -> Any:
        return self._apply(payload)


class RaftNode:
    """A voter of the controller quorum; see :class:`~chunkraft.controller.raft.log.RaftLog`.

    Durability (``docs/controller.md``): term and vote are fsynced, with a CRC, before any message
    that depends on them is sent; a follower fdatasyncs its journal before it acknowledges
    entries, and the leader before it counts its own entries toward a commit
    (``durable_syncobj.py``); so an outcome, handed back as soon as its entry is applied, is on
    the disk of a majority, this node's included. Thread-safe: proposals, status and the state
    machine's readers may run in any thread; everything else runs in pysyncobj's tick thread.
    """

    def __init__(self, settings: RaftSettings, host: ImageHost | None = None) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.host: ImageHost = host or InProcessImageHost(
            MetadataStateMachine(max_retained_bytes=settings.max_retained_bytes),
            settings.cluster_id)
        self.directory = VoterDirectory(settings.voters, {}, self.host.controllers)
        self._apply_listeners: list[Callable[[], None]] = []
        self._leadership_listeners: list[Callable[[bool], None]] = []
        self._tick_listeners: list[Callable[[], None]] = []
        self._closed = False
        self._exit: Callable[[int], NoReturn] = os._exit  # the fail-stop; replaced in tests
        self._dump_status = SERIALIZER_STATE.NOT_SERIALIZING
        self._dump_started = 0.0
        self._bytes_since_dump = 0
        # Readiness is honest only if it can tell a Raft thread that stopped ticking: a follower
        # that misses an election timeout of ticks starts an election, a leader loses followers.
        self.ticks = TickWatch(settings.election_timeout_max, on_stall=self._log_stall)
        self.leadership = LeadershipWatch()
        """Leadership changes and term increments this node saw (observed on every tick)."""
        self.dumps_written = 0
        self.export_process: Any = None
        """The last snapshot export started (a Popen), for tests; None before any."""
        # The raft dir and an empty journal, durable before a term store can name the journal.
        prepare_journal_file(settings.journal_path)
        clean_dump_leftovers(settings.dump_path)
        self._check_files()
        self._entry_point = _EntryPoint(self._apply)
        conf = SyncObjConf(
            password=settings.password,
            bindAddress=settings.address,
            journalFile=str(settings.journal_path),
            fullDumpFile=str(settings.dump_path),
            serializer=self._start_dump,
            serializeChecker=self._dump_state,
            deserializer=self._read_dump,
            useFork=False,
            appendEntriesUseBatch=False,
            raftMinTimeout=settings.election_timeout_min,
            raftMaxTimeout=settings.election_timeout_max,
            appendEntriesPeriod=settings.append_entries_period,
            connectionRetryTime=settings.connection_retry,
            connectionTimeout=max(settings.election_timeout_max, 1.0),
            # pysyncobj sends an entry of this size or more in pieces, and its last-piece test
            # compares against the command's length, not the pickled entry's: such entries
            # reach followers truncated. Group commit keeps entries far below this.
            appendEntriesBatchSizeBytes=APPEND_ENTRIES_BATCH_BYTES,
            leaderFallbackTimeout=settings.leader_fallback_timeout,
            commandsWaitLeader=False,
            logCompactionMinEntries=settings.log_compaction_min_entries,
            logCompactionMinTime=settings.log_compaction_min_time,
            dynamicMembershipChange=True,
            onStateChanged=self._on_state_changed,
        )
        others = [address for node, address in settings.voters.items() if node != self.node_id]
        self._transport_class = guarded_transport(settings.transport)
        joining = settings.joining_marker_path
        if joining.exists():
            logger.info("formatted to join a running quorum (%s): no election until the leader "
                        "has added this node (chunkraft quorum add-controller) and been heard",
                        joining)
        self._syncobj = DurableSyncObj(settings.address, others, conf,
                                       consumers=[self._entry_point],
                                       transportClass=self._transport_class,
                                       joining=joining.exists(),
                                       on_joined=lambda: self._joined(joining))
        self.membership = QuorumMembership(self._syncobj, settings.address, self.directory)
        journal = getattr(self._syncobj, "_SyncObj__raftLog", None)
        if isinstance(journal, ConflictOnlyJournal):
            syncobj = self._syncobj
            journal.last_applied = lambda: int(syncobj.raftLastApplied)
            journal.on_applied_truncation = self._fail_stop
        self._syncobj.addOnTickCallback(self._after_tick)

    @property
    def state_machine(self) -> MetadataStateMachine:
        """The state machine, when it is in this process (not with the Raft process's host)."""
        host = self.host
        if not isinstance(host, InProcessImageHost):
            raise AttributeError("the image is held by the API process, not the Raft process")
        return host.state_machine

    def _check_files(self) -> None:
        """Refuses to start on a torn or corrupt journal, dump or term/vote file
        (JournalCorruptError)."""
        journal = self.settings.journal_path
        term_vote, _ = load_term_vote(journal)
        logger.info("Raft term %d, vote %r", term_vote.term, term_vote.voted_for)
        # With neither journal.term nor pysyncobj's journal.meta, "term 0" means "unknown", not
        # "stored 0": only the epoch range and the log's own order can be checked then.
        term_known = (term_vote_path(journal).exists()
                      or Path(f"{os.fspath(journal)}.meta").exists())
        if self.settings.dump_path.exists():
            check_dump(self.settings.dump_path)
        if self.settings.journal_path.exists():
            result = check_journal(journal, current_term=term_vote.term if term_known else None)
            logger.info("journal checked: %d entries, %d chunkraft entries, indexes %d..%d",
                        result.entries, result.chunkraft_entries, result.first_index,
                        result.last_index)
            # A journal of pysyncobj's format (no record CRC), checked just now: converted once.
            convert_format_1(journal)

    def _fail_stop(self, first_index: int, why: str) -> NoReturn:
        """Ends the process: a leader would replace an entry this node applied (a broken Raft
        invariant). Nothing is truncated and nothing more is applied or acknowledged;
        the exit status says why, and removing ``raft/`` re-syncs the node from the quorum."""
        logger.critical(
            "FAIL-STOP: the leader's log conflicts with Raft index %d, which this node has "
            "already applied (%s). Truncating it would apply a second history on top of the "
            "first, so the node exits with status %d and its journal untouched. Compare image "
            "hashes across nodes, then remove %s to re-sync this node from the quorum",
            first_index, why, EXIT_APPLIED_TRUNCATION, self.settings.journal_path.parent)
        for handler in logging.getLogger().handlers:  # os._exit skips the usual flush
            handler.flush()
        self._exit(EXIT_APPLIED_TRUNCATION)
        raise AssertionError("unreachable: the exit function returned")

    # ------------------------------------------------------------------ tick thread

    def _apply(self, payload: bytes) -> Any:
        self._bytes_since_dump += len(payload)
        outcomes = self.host.apply(payload)
        # Told at once, not at the end of the tick: the rest of the tick (the commit index to
        # the followers, the next proposals and their sync) would delay every long poll of
        # the metadata stream that waits for this entry (propagation to brokers).
        for listener in self._apply_listeners:
            _call_safely(listener)
        return outcomes

    # A dump of a large image takes seconds to write; pysyncobj would write it in its tick thread
    # and stop heartbeats meanwhile. So the "serializer" only puts a placeholder where pysyncobj
    # renames from (a hard link to the previous dump, or an empty file when there is none) and
    # asks the image host to write the image of the last applied entry to ``dump.next`` (a
    # thread, or the API process). pysyncobj renames the placeholder into place as soon as
    # _start_dump returns and then polls _dump_state on each tick; once the host has written
    # ``dump.next`` whole, _dump_state renames it over ``dump`` and reports success, and only
    # then does pysyncobj compact its journal: until that, the journal still holds every entry
    # after the previous dump, and an empty placeholder found at start-up is simply removed
    # (see _clean_dump_leftovers).

    def _start_dump(self, path: str, data: Any) -> None:
        last, previous, members = data
        dump = self.settings.dump_path
        place_placeholder(Path(path), dump)
        upcoming = next_dump_path(dump)
        upcoming.unlink(missing_ok=True)
        names = [str(getattr(member, "address", member)) for member in members]
        ids = {name: node for name in names if (node := self.directory.id_of(name)) is not None}
        request = DumpRequest(tuple(last), tuple(previous), tuple(names), ids, upcoming)
        if not self.host.begin_dump(request):
            # The image stopped at a corrupt entry: a dump would claim every entry after it, and
            # compaction would drop them and the corrupt one, so the node would restart silently
            # behind. Fail the dump instead; the journal stays whole and start-up names the entry.
            self._dump_status = SERIALIZER_STATE.FAILED
            return
        self._dump_status = SERIALIZER_STATE.SERIALIZING
        self._dump_started = time.monotonic()
        self._bytes_since_dump = 0

    def _dump_state(self) -> int:
        if self._dump_status == SERIALIZER_STATE.SERIALIZING:
            written = self.host.dump_written()
            if isinstance(written, DumpWritten):
                self._dump_status = self._install_dump(written)
            elif written is False:
                self._dump_status = SERIALIZER_STATE.FAILED
        status = self._dump_status
        if status in (SERIALIZER_STATE.SUCCESS, SERIALIZER_STATE.FAILED):
            self._dump_status = SERIALIZER_STATE.NOT_SERIALIZING
        return int(status)

    def _install_dump(self, written: DumpWritten) -> int:
        """Renames the written ``dump.next`` over pysyncobj's placeholder (tick thread)."""
        dump = self.settings.dump_path
        if not install_next_dump(dump):
            return int(SERIALIZER_STATE.FAILED)
        self.dumps_written += 1
        logger.info("Raft dump written at offset %d in %.2f s", written.offset,
                    time.monotonic() - self._dump_started)
        threading.Thread(target=self._export_dump, args=(dump, written.offset, written.epoch),
                         name="chunkraft-dump-export", daemon=True).start()
        return int(SERIALIZER_STATE.SUCCESS)

    def _export_dump(self, dump: Path, offset: int, epoch: int) -> None:
        process = export_dump(self.settings.snapshot_export_dir,
                              self.settings.snapshot_export_retain, dump, offset, epoch)
        if process is not None:
            self.export_process = process

    def _read_dump(self, path: str) -> tuple[Any, Any, Any]:
        # A dump streamed from the leader was renamed into place by pysyncobj with no
        # fsync; this load comes before the follower acknowledges it (its journal is reset
        # here, so DurableSyncObj holds that answer until the next sync): make it durable.
        fsync_file(path)
        fsync_directory(Path(path).parent)
        try:
            header = read_dump_header(path)
        except Exception as error:
            self.host.mark_failed(f"the Raft dump cannot be loaded: {error}")
            raise
        self._compact_journal_to(header.previous_entry, header.last_entry)
        self.host.restore(Path(path))
        return header.last_entry, header.previous_entry, self._others_in_dump(header)

    def _others_in_dump(self, header: DumpHeader) -> list[str]:
        """The other voters when the dump was written, which pysyncobj makes its cluster (and
        replays later membership changes onto). By id where the dump knows it: this node is
        left out even if it had another address then, and a voter's address is the one its
        registration or this node's configuration gives now (an address an operator moved)."""
        others = []
        for address in header.members:
            node_id = header.member_ids.get(address, self.directory.id_of(address))
            if address == self.settings.address or node_id == self.node_id:
                continue
            current = None if node_id is None else self.directory.address_of(node_id)
            others.append(current or address)
        return others

    def _compact_journal_to(self, previous: Any, last: Any) -> None:
        """Compacts the journal to a dump's last two entries if it holds them further on.

        pysyncobj keeps its journal after loading a dump only if the journal *starts* with
        those two entries, and otherwise clears it down to them. A crash after a new dump was
        renamed into place but before pysyncobj compacted the journal to it (one tick later)
        leaves a journal that starts earlier and goes on past the dump: clearing it would drop
        synced, possibly acknowledged, entries. So do the compaction pysyncobj missed first
        (found by the power-cut harness's model)."""
        journal = getattr(getattr(self, "_syncobj", None), "_SyncObj__raftLog", None)
        if journal is None or len(journal) < 2:
            return
        position = int(previous[1]) - int(journal[0][1])
        if position <= 0 or position + 1 >= len(journal):
            return
        if tuple(journal[position]) == tuple(previous) and \
                tuple(journal[position + 1]) == tuple(last):
            logger.info("compacting the journal to the dump's Raft index %d before loading it "
                        "(%d later entries kept)", int(last[1]), len(journal) - position - 2)
            journal.deleteEntriesTo(position)

    def _on_state_changed(self, old: int, new: int) -> None:
        was_leader, is_leader = old == 2, new == 2
        if was_leader != is_leader:
            for listener in self._leadership_listeners:
                _call_safely(listener, is_leader)

    @staticmethod
    def _on_result(future: Future[tuple[BatchOutcome, ...]], result: Any, error: int) -> None:
        """Settles a proposal's future as soon as pysyncobj reports its entry applied (or
        failed), in whichever thread reports it: the writer's loop starts on the answer while
        this tick goes on. No sync is needed first: an applied entry was committed, and the
        leader counts its own entries toward a commit only once they are on its disk
        (``durable_syncobj.py``), as a follower acknowledges them only then."""
        settle(future, result, error)

    def _log_stall(self, gap: float) -> None:
        logger.warning("the Raft thread did not tick for %.3f s (election timeout %.2f-%.2f s): "
                       "the GIL was held elsewhere, or this thread applied or wrote for that "
                       "long", gap, self.settings.election_timeout_min,
                       self.settings.election_timeout_max)

    def _joined(self, marker: Path) -> None:
        """The first leader was heard: this node is a voter now (tick thread)."""
        logger.info("heard from the quorum's leader: joined; removing %s", marker)
        try:
            marker.unlink(missing_ok=True)
            fsync_directory(marker.parent)
        except OSError:
            logger.exception("removing the joining marker %s failed", marker)

    def _after_tick(self) -> None:
        self.ticks.tick()
        term = int(self._syncobj.raftCurrentTerm)
        if self.leadership.observe(term, self._syncobj._getLeader()):
            logger.info("the leader is node %s at Raft term %d (leadership change %d since this "
                        "node started, term +%d)", self.leader_id(), term,
                        self.leadership.leadership_changes, self.leadership.term_increments)
        self.membership.run_actions()
        for listener in self._tick_listeners:
            _call_safely(listener)
        if (self._bytes_since_dump > self.settings.log_compaction_max_bytes
                and self._dump_status == SERIALIZER_STATE.NOT_SERIALIZING):
            self._syncobj.forceLogCompaction()

    # ------------------------------------------------------------------ any thread

    def propose(self, batches: Sequence[ProposedBatch]) -> Future[tuple[BatchOutcome, ...]]:
        future: Future[tuple[BatchOutcome, ...]] = Future()
        payload = encode_proposal(batches, future, stopping=self._closed)
        if payload is None:
            return future

        def callback(result: Any, error: int) -> None:
            self._on_result(future, result, error)

        self.propose_encoded(payload, callback)
        return future

    def propose_encoded(self, payload: bytes, callback: Callable[[Any, int], None]) -> None:
        """Proposes an entry already encoded; ``callback(result, error)`` is pysyncobj's (the
        host's apply result on success), called from whichever thread settles it."""
        self._entry_point.commit_batches(payload, callback=callback)

    def is_leader(self) -> bool:
        # A leader whose term no epoch field can hold cannot commit anything: it
        # says it is not the controller, so clients look elsewhere and get no 500.
        return (bool(self._syncobj._isLeader()) and bool(self._syncobj.hasQuorum)
                and self.epoch() <= MAX_EPOCH)

    def leader_id(self) -> int | None:
        leader = self._syncobj._getLeader()
        if leader is None:
            return None
        return self.directory.id_of(str(getattr(leader, "address", leader)))

    def epoch(self) -> int:
        return int(self._syncobj.raftCurrentTerm)

    def status(self) -> QuorumStatus:
        status = self._syncobj.getStatus()
        state = _STATES.get(int(status["state"]), str(status["state"]))
        response_times: dict[Any, float] = getattr(
            self._syncobj, "_SyncObj__lastResponseTime", {})
        own_index = self._last_log_index()
        now = raft_clock()  # the clock of pysyncobj's response times
        voters = []
        for address in self.membership.addresses():
            node_id = self.directory.id_of(address)
            if node_id is None:
                node_id = -1  # an address no configuration or registration names
            if address == self.settings.address:
                voters.append(VoterStatus(self.node_id, address, own_index, 0, 0, True))
                continue
            connected, match = peer_progress(status, address, leader=state == "leader")
            contact = None
            if state == "leader":
                for node, seen in response_times.items():
                    if str(getattr(node, "address", node)) == address:
                        contact = int((now - seen) * 1000)
            voters.append(VoterStatus(
                node_id, address, match, None if match is None else max(own_index - match, 0),
                contact, connected))
        return QuorumStatus(
            node_id=self.node_id,
            state=state,
            leader_id=self.leader_id(),
            epoch=int(status["raft_term"]),
            has_quorum=bool(status["has_quorum"]),
            commit_index=int(status["commit_idx"]),
            last_applied_index=int(status["last_applied"]),
            high_watermark=self.host.high_watermark(),
            voters=tuple(sorted(voters, key=lambda voter: (voter.node_id, voter.address))),
            failure=self.host.failure(),
            tick_lag_seconds=round(self.ticks.lag(), 3),
            tick_lag_limit_seconds=self.ticks.limit,
            campaign_refused=bool(getattr(self._syncobj, "campaign_refused", False)),
            leadership_changes=self.leadership.leadership_changes,
            term_increments=self.leadership.term_increments,
            incarnation=self.leadership.incarnation,
            leader_for_seconds=_rounded(self.leadership.leader_for()),
        )

    def transport_closed_counts(self) -> dict[str, int]:
        """Raft connections the transport guard closed since start, by reason."""
        guard = self._transport_guard()
        return dict(guard.closed_counts()) if guard is not None else {}

    def transport_message_counts(self) -> dict[str, int]:
        """Raft messages sent and received since start, sealed or Fernet, and offers."""
        guard = self._transport_guard()
        return dict(guard.message_counts()) if guard is not None else {}

    def _transport_guard(self) -> Any:
        """The guard of pysyncobj's transport (None before it exists)."""
        return getattr(getattr(self._syncobj, "_SyncObj__transport", None), "guard", None)

    def _last_log_index(self) -> int:
        journal = getattr(self._syncobj, "_SyncObj__raftLog", None)
        if journal is None or len(journal) == 0:
            return 0
        return int(journal[-1][1])

    def add_apply_listener(self, listener: Callable[[], None]) -> None:
        self._apply_listeners.append(listener)

    def add_leadership_listener(self, listener: Callable[[bool], None]) -> None:
        self._leadership_listeners.append(listener)

    def add_tick_listener(self, listener: Callable[[], None]) -> None:
        """``listener()`` after every tick, in the tick thread: it must be quick."""
        self._tick_listeners.append(listener)

    def force_compaction(self) -> None:
        """Asks pysyncobj to write a dump and compact its journal at its next tick."""
        self._syncobj.forceLogCompaction()

    def close(self) -> None:
        """Stops the tick thread and closes the journal (flushed) and the port."""
        if self._closed:
            return
        self._closed = True
        self._syncobj.destroy_synchronous()


def _call_safely(listener: Callable[..., None], *args: Any) -> None:
    try:
        listener(*args)
    except Exception:  # a listener must never take the Raft thread down
        logger.exception("a Raft listener failed")


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)
