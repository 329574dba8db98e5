"""GroupCoordinator: consumer groups' offsets and membership on the broker that leads their
``__consumer_offsets`` partition.

The coordinator of group g is the leader of partition ``positive murmur2(g) % partitions`` of
``__consumer_offsets``. Its committed offsets are records of that partition (encoding:
:mod:`.offset_records`), appended through the ReplicaManager's leader path with acks=-1 so
they are replicated like any partition; the cache is the fold of the log up to the high
watermark (:class:`.offsets_state.OffsetsState`). When this broker leads an offsets partition
at a leader epoch it has not loaded, it replays the log from its start before answering (the
requests that arrive meanwhile wait a little, then get COORDINATOR_LOAD_IN_PROGRESS); before
every answer it folds what the log gained since (its own commits, and the COMMIT / ABORT
markers the transaction coordinator writes there, which settle TxnOffsetCommits). A broker
that does not lead the partition answers NOT_COORDINATOR. Membership
(:class:`.membership.GroupMembership`) is in memory, with each stable generation written to the
same partition, so a new coordinator restores it. A background task (started with the
coordinator) expires members, folds the led partitions' new records and loads newly led
partitions; the metadata listener (:meth:`GroupCoordinator.on_metadata`) starts loads as soon
as a delta makes this broker a leader. Everything runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from chunkraft.broker_agent.coordinator.groups.loaded import (
    WRITE_ERRORS,
    LeadershipLost,
    Loaded,
)
from chunkraft.broker_agent.coordinator.groups.membership import (
    GroupMembership,
    GroupState,
    Protocols,
)
from chunkraft.broker_agent.coordinator.groups.offset_records import (
    CommittedOffset,
    OffsetKey,
    encode_group_key,
    encode_key,
    encode_value,
)
from chunkraft.broker_agent.coordinator.marker_hooks import (
    add_marker_listener,
    remove_marker_listener,
)
from chunkraft.controller.image import MetadataImage
from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch import build_batch
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitTopic,
    OffsetFetchPartition,
    OffsetFetchTopic,
    OffsetFetchTopicRequest,
    RangeOffset,
    SyncGroupRequest,
    SyncGroupResponse,
)
from chunkraft.protocol.data_plane import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ProducePartitionData,
    ProduceRequest,
    ProduceTopicData,
)

__all__ = ["OFFSETS_TOPIC", "GroupCoordinator", "TopicPartition", "group_coordinator_of"]

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
LOAD_WAIT_S = 5.0  # how long a request waits for a load before COORDINATOR_LOAD_IN_PROGRESS
TICK_S = 0.25
LOAD_POLL_S = 0.05
LOAD_POLLS = 6000  # 5 minutes of waiting for the high watermark, then load what is there
WRITE_TIMEOUT_MS = 10_000
READ_BYTES = 4 * 1024 * 1024

TopicPartition = tuple[str, int]

_coordinators: weakref.WeakKeyDictionary[Any, GroupCoordinator] = weakref.WeakKeyDictionary()


def group_coordinator_of(replica_manager: Any) -> GroupCoordinator | None:
    """The group coordinator of a broker's ReplicaManager (None: none built yet)."""
    try:
        return _coordinators.get(replica_manager)
    except TypeError:
        return None


def _now_ms() -> int:
    return int(time.time() * 1000)


class GroupCoordinator:
    """The group coordinator of one broker (module docstring).

    ``replica_manager`` is the broker's ReplicaManager (its ``partitions``, ``fetch`` and
    ``produce``), ``image()`` the broker's current metadata image, ``now_ms`` the clock of
    session timeouts. Errors come back as :class:`Errors` values, never as exceptions; the
    routes authorize before calling. A broker process builds it with :meth:`for_broker` (a
    metadata listener, so it loads offsets partitions as soon as it leads them); the routes
    find it with :func:`group_coordinator_of`.
    """

    def __init__(self, replica_manager: Any, image: Callable[[], MetadataImage], *,
                 now_ms: Callable[[], int] = _now_ms) -> None:
        self.replica_manager = replica_manager
        self.image = image
        self.now_ms = now_ms
        self.loaded: dict[int, Loaded] = {}
        self.groups: dict[str, GroupMembership] = {}
        self._loads: dict[int, asyncio.Task[Loaded | None]] = {}
        self._task: asyncio.Task[None] | None = None
        with contextlib.suppress(TypeError):  # a stand-in that cannot be a weak key (tests)
            _coordinators[replica_manager] = self

    @classmethod
    def for_broker(cls, follower: Any, replica_manager: Any) -> GroupCoordinator:
        """The coordinator of a broker process, a listener of ``follower`` (the metadata
        follower, whose listeners run after the ReplicaManager applied each delta)."""

        def image() -> MetadataImage:
            current: MetadataImage = follower.image
            return current

        coordinator = cls(replica_manager, image)
        follower.add_listener(coordinator)
        return coordinator

    # ------------------------------------------------------------------ lifecycle

    async def on_metadata(self, delta: Any, image: MetadataImage) -> None:
        """Metadata listener: starts the background task on the first delta, starts loading
        offsets partitions led at a new epoch and forgets those lost (without waiting)."""
        self.start()
        led = self._led_partitions()
        for index in list(self.loaded):
            if self.loaded[index].epoch != led.get(index):
                self._unload(index)
        for index, epoch in led.items():
            if index not in self.loaded:
                self._start_load(index, epoch)

    def start(self) -> None:
        """Starts the background task (once) and listens to transaction markers."""
        if self._task is not None:
            return
        self._task = asyncio.get_running_loop().create_task(self._run(), name="group-coordinator")
        try:
            add_marker_listener(self.replica_manager, self._on_marker)
        except TypeError:  # a stand-in replica manager (tests) that cannot be a weak key
            log.debug("no marker listener on %r", self.replica_manager)

    async def _on_marker(self, topic: str, partition: int, producer_id: int,
                         producer_epoch: int, committed: bool) -> None:
        """A transaction marker reached an offsets partition here: fold it at once, so the
        transaction's offsets are visible (or gone) before EndTxn's markers are answered."""
        loaded = self.loaded.get(partition) if topic == OFFSETS_TOPIC else None
        if loaded is not None:
            try:
                await self._catch_up(partition, loaded)
            except LeadershipLost as lost:
                log.info("%s: unloaded", lost)
                self._unload(partition)

    async def stop(self) -> None:
        """Stops the background task and the loads in flight."""
        with contextlib.suppress(TypeError):
            remove_marker_listener(self.replica_manager, self._on_marker)
        tasks = [t for t in (self._task, *self._loads.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._task = None
        self._loads.clear()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                await self.tick()
            except Exception:
                log.exception("group coordinator tick failed")

    async def tick(self) -> None:
        """Expires members; loads offsets partitions newly led here, forgets those lost."""
        for group in list(self.groups.values()):
            group.tick()
        led = self._led_partitions()
        for index in list(self.loaded):
            if self.loaded[index].epoch != led.get(index):
                self._unload(index)
        for index, epoch in led.items():
            if index not in self.loaded:
                self._start_load(index, epoch)
            else:
                try:
                    await self._catch_up(index, self.loaded[index])
                except LeadershipLost as lost:
                    log.info("%s: unloaded", lost)
                    self._unload(index)

    # ------------------------------------------------------------------ partitions

    def partition_count(self) -> int:
        """Partitions of ``__consumer_offsets`` in this broker's image (0: not created)."""
        topic = self.image().topics.get_by_name(OFFSETS_TOPIC)
        return 0 if topic is None else len(topic.partitions)

    def partition_for(self, group_id: str) -> int | None:
        count = self.partition_count()
        return None if count == 0 else positive_hash(group_id.encode()) % count

    def _led_partitions(self) -> dict[int, int]:
        """Offsets partitions this broker leads now, with their leader epochs."""
        out: dict[int, int] = {}
        partitions = getattr(self.replica_manager, "partitions", {})
        for (topic, index), partition in list(partitions.items()):
            if topic == OFFSETS_TOPIC and not partition.closed and partition.is_leader:
                out[index] = partition.leader_epoch
        return out

    def _leader_epoch(self, index: int) -> int | None:
        partitions = getattr(self.replica_manager, "partitions", {})
        partition = partitions.get((OFFSETS_TOPIC, index))
        if partition is None or partition.closed or not partition.is_leader:
            return None
        epoch: int = partition.leader_epoch
        return epoch

    def _unload(self, index: int) -> None:
        self.loaded.pop(index, None)
        task = self._loads.pop(index, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._forget_groups(index)

    def _forget_groups(self, index: int) -> None:
        count = self.partition_count()
        for group_id in [g for g in self.groups
                         if count and positive_hash(g.encode()) % count == index]:
            del self.groups[group_id]

    def _start_load(self, index: int, epoch: int) -> asyncio.Task[Loaded | None]:
        task = self._loads.get(index)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._load(index, epoch),
                                                          name=f"load-offsets-{index}")
            self._loads[index] = task
        return task

    async def _load(self, index: int, epoch: int) -> Loaded | None:
        try:
            loaded = Loaded(epoch)
            partition = self.replica_manager.partitions[(OFFSETS_TOPIC, index)]
            loaded.state.next_offset = partition.log.log_start_offset
            # Everything in the log when this term began was written by earlier leaders and
            # acknowledged to clients; it is committed once the ISR confirms it (the HW of a
            # new leader trails its log end until the followers fetch again). Kafka's loader
            # reads to the log end; this one waits for the HW to get there.
            target = partition.log.log_end_offset
            started = time.monotonic()
            for _ in range(LOAD_POLLS):
                await self._catch_up(index, loaded)
                if self._leader_epoch(index) != epoch:
                    return None
                if loaded.state.next_offset >= target:
                    break
                await asyncio.sleep(LOAD_POLL_S)
            else:
                log.warning("%s-%d: the high watermark did not reach %d; loaded up to %d",
                            OFFSETS_TOPIC, index, target, loaded.state.next_offset)
            # Members are those of the log's membership records, not of an earlier term here.
            self._forget_groups(index)
            for group_id, value in loaded.state.memberships.items():
                try:
                    self.groups[group_id] = GroupMembership.restore(group_id, self.now_ms,
                                                                    value)
                except (KeyError, TypeError, ValueError):
                    log.warning("group %s: unreadable membership record skipped", group_id)
            self.loaded[index] = loaded
            log.info("loaded %s-%d at leader epoch %d up to offset %d in %.3f s: %d groups",
                     OFFSETS_TOPIC, index, epoch, loaded.state.next_offset,
                     time.monotonic() - started, len(loaded.state.groups()))
            return loaded
        except LeadershipLost as lost:
            log.info("%s: not loaded", lost)
            return None
        except Exception:
            log.exception("loading %s-%d failed", OFFSETS_TOPIC, index)
            return None
        finally:
            if self._loads.get(index) is asyncio.current_task():
                del self._loads[index]

    async def _catch_up(self, index: int, loaded: Loaded) -> None:
        """Folds the partition's log from ``state.next_offset`` up to its high watermark."""
        async with loaded.lock:
            await self._fold(index, loaded)

    async def _fold(self, index: int, loaded: Loaded) -> None:
        state = loaded.state
        for _ in range(100_000):  # bounded: each round advances or stops
            request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=READ_BYTES, topics=(
                FetchTopic(topic=OFFSETS_TOPIC, partitions=(FetchPartition(
                    partition=index, fetch_offset=state.next_offset,
                    partition_max_bytes=READ_BYTES),)),))
            response = await self.replica_manager.fetch(request)
            answer = response.responses[0].partitions[0]
            if answer.error_code == Errors.OFFSET_OUT_OF_RANGE.code and \
                    answer.log_start_offset > state.next_offset:
                state.next_offset = answer.log_start_offset  # retention removed the head
                continue
            if answer.error_code == Errors.NOT_LEADER_OR_FOLLOWER.code:
                raise LeadershipLost(f"{OFFSETS_TOPIC}-{index} is no longer led here (reading "
                                      f"at {state.next_offset}: NOT_LEADER_OR_FOLLOWER)")
            if answer.error_code != 0:
                raise RuntimeError(f"reading {OFFSETS_TOPIC}-{index} at {state.next_offset}: "
                                   f"{Errors.for_code(answer.error_code).name}")
            before = state.next_offset
            if answer.records:
                state.apply_bytes(answer.records)
            if state.next_offset == before or state.next_offset >= answer.high_watermark:
                return

    async def ready(self, group_id: str) -> tuple[Errors, int, Loaded | None]:
        """Whether this broker coordinates ``group_id`` now, with its offsets partition caught
        up: (NONE, partition, loaded) or (error, partition or -1, None)."""
        index = self.partition_for(group_id)
        if index is None:
            return Errors.COORDINATOR_NOT_AVAILABLE, -1, None
        epoch = self._leader_epoch(index)
        if epoch is None:
            if index in self.loaded:
                self._unload(index)
            return Errors.NOT_COORDINATOR, index, None
        loaded = self.loaded.get(index)
        if loaded is None or loaded.epoch != epoch:
            if loaded is not None:
                self._unload(index)
            task = self._start_load(index, epoch)
            try:
                loaded = await asyncio.wait_for(asyncio.shield(task), LOAD_WAIT_S)
            except TimeoutError:
                return Errors.COORDINATOR_LOAD_IN_PROGRESS, index, None
            if loaded is None:
                return Errors.COORDINATOR_LOAD_IN_PROGRESS, index, None
            return Errors.NONE, index, loaded
        try:
            await self._catch_up(index, loaded)
        except LeadershipLost as lost:
            log.info("%s: unloaded", lost)
            self._unload(index)
            return Errors.NOT_COORDINATOR, index, None
        except Exception:
            log.exception("folding %s-%d failed", OFFSETS_TOPIC, index)
            return Errors.COORDINATOR_NOT_AVAILABLE, index, None
        return Errors.NONE, index, loaded

    # ------------------------------------------------------------------ offsets

    async def commit_offsets(
        self, group_id: str, generation_id: int, member_id: str,
        topics: Iterable[OffsetCommitTopic], *, producer_id: int = -1, producer_epoch: int = -1,
        transactional_id: str | None = None,
    ) -> tuple[Errors, dict[TopicPartition, Errors]]:
        """OffsetCommit (``producer_id`` -1) or TxnOffsetCommit: appends the commits of
        ``topics`` as one batch and answers once the ISR has it. Returns a whole-request
        error (NONE when it went through) and the outcome per partition."""
        error, index, loaded = await self.ready(group_id)
        entries: list[tuple[TopicPartition, CommittedOffset]] = []
        now = self.now_ms()
        for topic in topics:
            for p in topic.partitions:
                entries.append(((topic.name, p.partition_index), CommittedOffset(
                    p.committed_offset, p.committed_leader_epoch, p.committed_metadata,
                    tuple((r.lo, r.hi, r.offset) for r in p.range_offsets), now)))
        if loaded is None:
            return error, {tp: error for tp, _ in entries}
        refused = self._check_commit(group_id, generation_id, member_id,
                                     transactional=producer_id >= 0)
        if refused is not Errors.NONE:
            return refused, {tp: refused for tp, _ in entries}
        if not entries:
            return Errors.NONE, {}
        records = [(encode_key(OffsetKey(group_id, tp[0], tp[1])), encode_value(value), now)
                   for tp, value in entries]
        batch = build_batch(records, producer_id=producer_id, producer_epoch=producer_epoch,
                            transactional=producer_id >= 0)
        outcome = await self.append(index, loaded, batch, transactional_id)
        return Errors.NONE, {tp: outcome for tp, _ in entries}

    def _check_commit(self, group_id: str, generation_id: int, member_id: str, *,
                      transactional: bool) -> Errors:
        """Whether the group takes this commit now. A transactional commit without a
        generation is fenced by its producer epoch alone (before KIP-447); with one it is
        checked as a member's (KIP-447)."""
        if transactional and generation_id < 0 and not member_id:
            return Errors.NONE
        group = self.groups.get(group_id)
        if group is not None:
            return group.check_commit(member_id, generation_id)
        if generation_id >= 0 or member_id:
            # A member of a generation this coordinator never formed (the group moved here).
            return Errors.UNKNOWN_MEMBER_ID
        return Errors.NONE

    async def append(self, index: int, loaded: Loaded, batch: bytes,
                     transactional_id: str | None) -> Errors:
        """Appends ``batch`` to offsets partition ``index`` with acks=-1 and folds it; the
        error a client should see if it failed (NOT_COORDINATOR when leadership moved)."""
        request = ProduceRequest(
            transactional_id=transactional_id, acks=-1, timeout_ms=WRITE_TIMEOUT_MS,
            topics=(ProduceTopicData(name=OFFSETS_TOPIC, partition_count=self.partition_count(),
                                     partitions=(ProducePartitionData(
                                         index=index,
                                         records=batch),)),))
        async with loaded.lock:
            response = await self.replica_manager.produce(request)
            answer = response.topics[0].partitions[0]
            if answer.error_code != 0:
                error = Errors.for_code(answer.error_code)
                log.info("appending to %s-%d failed: %s %s", OFFSETS_TOPIC, index, error.name,
                         answer.error_message)
                return WRITE_ERRORS.get(error, error)
            # Fold it now: the HW passed the batch (acks=-1), so the log is the truth.
            try:
                await self._fold(index, loaded)
            except Exception:
                log.exception("folding %s-%d failed", OFFSETS_TOPIC, index)
        return Errors.NONE

    async def fetch_offsets(
        self, group_id: str, topics: Iterable[OffsetFetchTopicRequest] | None, *,
        require_stable: bool = False, may_describe: Callable[[str], bool] = lambda _: True,
    ) -> tuple[Errors, tuple[OffsetFetchTopic, ...]]:
        """OffsetFetch: the committed offsets (with their range offsets) of ``topics``, or of
        every partition the group committed (topics ``may_describe`` refuses left out);
        partitions without a commit answer offset -1. ``require_stable``: partitions with a
        pending transactional commit answer UNSTABLE_OFFSET_COMMIT."""
        error, _, loaded = await self.ready(group_id)
        if loaded is None:
            return error, ()
        offsets = loaded.state.offsets_of(group_id)
        wanted: list[tuple[str, tuple[int, ...]]]
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for name, partition in sorted(offsets):
                if may_describe(name):
                    by_topic.setdefault(name, []).append(partition)
            wanted = [(name, tuple(ps)) for name, ps in by_topic.items()]
        else:
            wanted = [(t.name, t.partition_indexes) for t in topics]
        out: list[OffsetFetchTopic] = []
        for name, partitions in wanted:
            answers: list[OffsetFetchPartition] = []
            for partition in partitions:
                if require_stable and loaded.state.has_pending(group_id, [(name, partition)]):
                    unstable = Errors.UNSTABLE_OFFSET_COMMIT
                    answers.append(OffsetFetchPartition(
                        partition_index=partition, error_code=unstable.code,
                        error_message=unstable.message))
                    continue
                value = offsets.get((name, partition))
                if value is None:
                    answers.append(OffsetFetchPartition(partition_index=partition))
                    continue
                answers.append(OffsetFetchPartition(
                    partition_index=partition, committed_offset=value.offset,
                    committed_leader_epoch=value.leader_epoch, metadata=value.metadata,
                    range_offsets=tuple(RangeOffset(lo=lo, hi=hi, offset=off)
                                        for lo, hi, off in value.range_offsets)))
            out.append(OffsetFetchTopic(name=name, partitions=tuple(answers)))
        return Errors.NONE, tuple(out)

    # ------------------------------------------------------------------ membership

    async def _write_membership(self, group_id: str, group: GroupMembership, index: int,
                                loaded: Loaded) -> None:
        value = group.snapshot()
        data = None if value is None else json.dumps(value, separators=(",", ":")).encode()
        batch = build_batch([(encode_group_key(group_id), data, self.now_ms())])
        outcome = await self.append(index, loaded, batch, None)
        if outcome is not Errors.NONE:
            log.warning("group %s: writing its membership failed: %s", group_id, outcome.name)

    def _group(self, group_id: str) -> GroupMembership:
        group = self.groups.get(group_id)
        if group is None:
            group = GroupMembership(group_id, self.now_ms)
            self.groups[group_id] = group
        return group

    async def join_group(self, request: JoinGroupRequest, protocols: Protocols | None = None
                         ) -> JoinGroupResponse:
        """JoinGroup; ``protocols``: a Kafka member's (then ``request.topics`` is empty)."""
        error, _, loaded = await self.ready(request.group_id)
        if loaded is None:
            return JoinGroupResponse(error_code=error.code, error_message=error.message,
                                     member_id=request.member_id)
        future = self._group(request.group_id).join(
            request.member_id, request.topics, request.session_timeout_ms,
            request.rebalance_timeout_ms, protocols)
        # The rebalance deadline completes the future (tick); this bound only guards a
        # coordinator that stopped ticking.
        try:
            return await asyncio.wait_for(asyncio.shield(future),
                                          request.rebalance_timeout_ms / 1000 + 5)
        except TimeoutError:
            rebalancing = Errors.REBALANCE_IN_PROGRESS
            return JoinGroupResponse(error_code=rebalancing.code,
                                     error_message=rebalancing.message,
                                     member_id=request.member_id)

    async def sync_group(self, request: SyncGroupRequest,
                         opaque: dict[str, bytes] | None = None) -> SyncGroupResponse:
        """SyncGroup; ``opaque``: a Kafka leader's assignments, by member id."""
        error, index, loaded = await self.ready(request.group_id)
        group = self.groups.get(request.group_id)
        if loaded is None:
            return SyncGroupResponse(error_code=error.code, error_message=error.message)
        if group is None:
            unknown = Errors.UNKNOWN_MEMBER_ID
            return SyncGroupResponse(error_code=unknown.code, error_message=unknown.message)
        was_stable = group.state is GroupState.STABLE
        future = group.sync(request.member_id, request.generation_id, request.assignments,
                            opaque)
        if not was_stable and group.state is GroupState.STABLE and loaded is not None:
            # The leader's assignment completed the generation: keep it in the log (Kafka
            # answers the SyncGroup once that write is done; a failed write is only logged
            # here: the members then rejoin after a coordinator move).
            await self._write_membership(request.group_id, group, index, loaded)
        member = group.members.get(request.member_id)
        bound = (member.rebalance_timeout_ms if member is not None else 30_000) / 1000 + 5
        try:
            return await asyncio.wait_for(asyncio.shield(future), bound)
        except TimeoutError:
            rebalancing = Errors.REBALANCE_IN_PROGRESS
            return SyncGroupResponse(error_code=rebalancing.code,
                                     error_message=rebalancing.message)

    async def heartbeat(self, group_id: str, generation_id: int, member_id: str
                        ) -> HeartbeatResponse:
        error, _, loaded = await self.ready(group_id)
        if loaded is not None:
            group = self.groups.get(group_id)
            error = (Errors.UNKNOWN_MEMBER_ID if group is None
                     else group.heartbeat(member_id, generation_id))
        return HeartbeatResponse(error_code=error.code,
                                 error_message=error.message if error.code else None)

    async def leave_group(self, group_id: str, member_id: str) -> LeaveGroupResponse:
        error, index, loaded = await self.ready(group_id)
        if loaded is not None:
            group = self.groups.get(group_id)
            error = Errors.UNKNOWN_MEMBER_ID if group is None else group.leave(member_id)
            if group is not None and error is Errors.NONE and not group.members:
                await self._write_membership(group_id, group, index, loaded)
        return LeaveGroupResponse(error_code=error.code,
                                  error_message=error.message if error.code else None)
