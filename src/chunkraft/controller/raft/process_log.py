"""RaftProcessLog: the controller's Raft log with its Raft node in a process of its own.

The API process (HTTP, the Kafka listener, validation) holds the image and this object; the Raft
process (``raft_process.py``) holds pysyncobj, its journal and its port. Over one socket
(``process_channel.py``) this side sends proposals and receives, in Raft order, every committed
entry (applied here, by the channel's reader thread, to the state machine), each proposal's
result, leadership changes and dump requests (the dump is written here, where the image is).
Status and membership calls are answered by the Raft process's main thread, never its tick
thread, so a busy Raft thread still answers and a busy API never delays a tick.

The two stop as one unit: closing this log closes the channel, and the Raft process closes its
node and exits; a Raft process that dies (kill -9, a fail-stop) takes this process down with
one log line naming its exit status (a controller without its Raft node must not answer).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import socket
import struct
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from chunkraft.controller.image.controllers import ControllersImage
from chunkraft.controller.raft.callbacks import settle
from chunkraft.controller.raft.dump import entry_from_json
from chunkraft.controller.raft.entry import ProposedBatch
from chunkraft.controller.raft.image_host import DumpRequest, DumpWritten, InProcessImageHost
from chunkraft.controller.raft.log import ProposalError, QuorumStatus, encode_proposal
from chunkraft.controller.raft.membership import Voter, VoterDirectory
from chunkraft.controller.raft.node import RaftSettings
from chunkraft.controller.raft.process_channel import (
    Channel,
    ChannelClosed,
    Kind,
    status_from_json,
)
from chunkraft.controller.raft.raft_process import encode_controllers, settings_to_json
from chunkraft.controller.raft.state_machine import BatchOutcome, MetadataStateMachine
from chunkraft.errors import ChunkraftError

__all__ = ["RaftProcessError", "RaftProcessLog", "TickReport"]

logger = logging.getLogger(__name__)

_ID = struct.Struct(">Q")
_KEPT_OUTCOMES = 4096
"""Outcomes of the latest entries kept until their proposal's result arrives (it follows its
entry on the channel at once; the rest are other nodes' proposals, never asked for)."""
CALL_TIMEOUT = 2.0
"""A status or membership read the Raft process does not answer within this is reported as a
stalled Raft process (not ready) rather than waited for."""


class RaftProcessError(ChunkraftError):
    """The Raft process could not start (its message says why: a corrupt journal, a port)."""


@dataclass(frozen=True, slots=True)
class TickReport:
    """The Raft thread's stalls and tick-gap histogram, as the Raft process's
    :class:`~chunkraft.controller.raft.log.TickWatch` counts them (a
    :class:`~chunkraft.controller.raft.log.TickCounts`); a copy, so immutable and
    thread-safe."""

    stalls: int
    longest_stall: float
    gap_counts: tuple[int, ...]
    """One count per bucket of :data:`~chunkraft.controller.raft.log.TICK_GAP_BUCKETS` (the
    two processes ship together, so their bounds are the same)."""
    gap_sum: float


class RaftProcessLog:
    """A :class:`~chunkraft.controller.raft.log.RaftLog` whose Raft node runs in a child
    process; the state machine is here. Thread-safe as the RaftLog contract says; apply and
    leadership listeners are called from the channel's reader thread (quick, never raising)."""

    def __init__(self, settings: RaftSettings, *,
                 exit_process: Callable[[int], NoReturn] = os._exit) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.state_machine = MetadataStateMachine(max_retained_bytes=settings.max_retained_bytes)
        self._host = InProcessImageHost(self.state_machine, settings.cluster_id)
        self.directory = VoterDirectory(settings.voters, {},
                                        lambda: self.state_machine.image.controllers)
        self.membership = RemoteMembership(self)
        self._exit = exit_process
        self._apply_listeners: list[Callable[[], None]] = []
        self._leadership_listeners: list[Callable[[bool], None]] = []
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._outcomes: OrderedDict[int, tuple[BatchOutcome, ...]] = OrderedDict()
        self._applied = 0
        self._state: tuple[bool, int | None, int] = (False, None, 0)
        self._sent_controllers = self.state_machine.image.controllers
        self._hello: Future[dict[str, Any]] = Future()
        self._closing = False
        ours, theirs = socket.socketpair()
        self._channel = Channel(ours)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chunkraft.controller.raft.raft_process",
             str(theirs.fileno())], pass_fds=[theirs.fileno()])
        theirs.close()
        self._channel.send_json(Kind.SETTINGS, {
            "settings": settings_to_json(settings),
            "controllers": encode_controllers(self._sent_controllers).hex()})
        self._reader = threading.Thread(target=self._read, name="chunkraft-raft-channel",
                                        daemon=True)
        self._reader.start()
        hello = self._hello.result()  # set by the reader: HELLO, or the end of the channel
        if "error" in hello:
            self.close()
            raise RaftProcessError(str(hello["error"]))
        self._state = _state_of(hello["state"])
        logger.info("Raft process %d started for node %d", self.process.pid, self.node_id)

    # ------------------------------------------------------------------ the channel's reader

    def _read(self) -> None:
        try:
            while True:
                kind, body = self._channel.receive()
                self._handle(kind, body)
        except ChannelClosed as closed:
            if not self._hello.done():
                self._hello.set_result({"error": self._exit_description(closed)})
                return
            if not self._closing:
                self._raft_process_died(closed)

    def _handle(self, kind: Kind, body: bytes) -> None:
        if kind is Kind.APPLIED:
            self._apply(body)
        elif kind is Kind.RESULT:
            self._result(json.loads(body))
        elif kind is Kind.STATE:
            self._state = _state_of(json.loads(body)["state"])
        elif kind is Kind.LEADERSHIP:
            message = json.loads(body)
            self._state = _state_of(message["state"])
            for listener in self._leadership_listeners:
                _call_safely(listener, bool(message["leader"]))
        elif kind is Kind.DUMP:
            self._dump(json.loads(body))
        elif kind is Kind.RESTORE:
            self._restore(Path(json.loads(body)["path"]))
        elif kind is Kind.REPLY:
            reply = json.loads(body)
            future = self._pending.pop(int(reply["id"]), None)
            if future is not None and not future.done():
                future.set_result(reply)
        elif kind is Kind.HELLO:
            self._hello.set_result(json.loads(body))
        else:
            logger.warning("the API process ignores a %s message", kind.name)

    def _apply(self, payload: bytes) -> None:
        self._applied += 1
        self._outcomes[self._applied] = self._host.apply(payload)
        if len(self._outcomes) > _KEPT_OUTCOMES:
            self._outcomes.popitem(last=False)
        controllers = self.state_machine.image.controllers
        if controllers is not self._sent_controllers and controllers != self._sent_controllers:
            self._send_controllers(controllers)
        for listener in self._apply_listeners:
            _call_safely(listener)

    def _send_controllers(self, controllers: ControllersImage) -> None:
        self._sent_controllers = controllers
        with contextlib.suppress(ChannelClosed):  # the reader sees the end next
            self._channel.send(Kind.CONTROLLERS, encode_controllers(controllers))

    def _result(self, result: dict[str, Any]) -> None:
        future = self._pending.pop(int(result["id"]), None)
        if future is None:
            return
        if "error" in result:
            settle(future, None, int(result["error"]))
            return
        outcomes = self._outcomes.pop(int(result["seq"]), None)
        if outcomes is None:  # cannot happen while results follow their entries
            future.set_exception(ProposalError("the entry's outcome was not kept"))
        else:
            future.set_result(outcomes)

    def _dump(self, message: dict[str, Any]) -> None:
        request = DumpRequest(
            entry_from_json(message["last"]), entry_from_json(message["previous"]),
            tuple(message["members"]), {str(k): int(v) for k, v in message["member_ids"].items()},
            Path(message["target"]))
        if not self._host.begin_dump(request, on_done=self._dump_done):
            self._dump_done(False)

    def _dump_done(self, written: DumpWritten | bool) -> None:
        """Answers the Raft process's DUMP (from the dump's own thread once it is written)."""
        if isinstance(written, DumpWritten):
            self._send_json_quietly(Kind.DUMP_DONE, {"offset": written.offset,
                                                     "epoch": written.epoch})
        else:
            self._send_json_quietly(Kind.DUMP_DONE, {"failed": True})

    def _restore(self, path: Path) -> None:
        try:
            self._host.restore(path)
        except Exception:
            logger.exception("the dump the Raft process handed over cannot be loaded")
        finally:
            path.unlink(missing_ok=True)

    def _send_json_quietly(self, kind: Kind, value: Any) -> None:
        with contextlib.suppress(ChannelClosed):
            self._channel.send_json(kind, value)

    def _exit_description(self, closed: ChannelClosed) -> str:
        try:
            status = self.process.wait(10)
        except subprocess.TimeoutExpired:
            return f"the Raft process stopped answering ({closed})"
        return f"the Raft process exited with status {status}"

    def _raft_process_died(self, closed: ChannelClosed) -> NoReturn:
        description = self._exit_description(closed)
        status = self.process.returncode
        code = status if status is not None and status > 0 else 1
        logger.critical("%s (pid %d, node %d): this controller stops with it (exit status %d)",
                        description, self.process.pid, self.node_id, code)
        for handler in logging.getLogger().handlers:  # os._exit skips the usual flush
            handler.flush()
        self._exit(code)

    # ------------------------------------------------------------------ calls

    def _call(self, method: str, *args: Any, timeout: float = CALL_TIMEOUT) -> Any:
        reply = self._call_async(method, *args).result(timeout)
        if "error" in reply:
            raise ChunkraftError(f"the Raft process failed to answer {method}: "
                                 f"{reply['error']}")
        return reply.get("value")

    def _call_async(self, method: str, *args: Any) -> Future[dict[str, Any]]:
        call_id = next(self._ids)
        future: Future[dict[str, Any]] = Future()
        self._pending[call_id] = future
        try:
            self._channel.send_json(Kind.CALL, {"id": call_id, "method": method,
                                                "args": list(args)})
        except ChannelClosed as closed:
            self._pending.pop(call_id, None)
            future.set_exception(ProposalError(f"the Raft process is gone: {closed}"))
        return future

    # ------------------------------------------------------------------ RaftLog

    def propose(self, batches: Sequence[ProposedBatch]) -> Future[tuple[BatchOutcome, ...]]:
        future: Future[tuple[BatchOutcome, ...]] = Future()
        payload = encode_proposal(batches, future, stopping=self._closing)
        if payload is None:
            return future
        request_id = next(self._ids)
        self._pending[request_id] = future
        try:
            self._channel.send(Kind.PROPOSE, _ID.pack(request_id) + payload)
        except ChannelClosed as closed:
            self._pending.pop(request_id, None)
            future.set_exception(ProposalError(f"the Raft process is gone: {closed}"))
        return future

    def is_leader(self) -> bool:
        return self._state[0]

    def leader_id(self) -> int | None:
        return self._state[1]

    def epoch(self) -> int:
        return self._state[2]

    def status(self) -> QuorumStatus:
        image = self.state_machine.image
        try:
            value = self._call("status")
        except (FutureTimeout, ChunkraftError) as error:
            # Readiness must say so: a Raft process that does not answer counts as stalled.
            logger.warning("the Raft process did not answer a status request: %s", error)
            return QuorumStatus(
                node_id=self.node_id, state="unknown", leader_id=self.leader_id(),
                epoch=self.epoch(), has_quorum=False, commit_index=0, last_applied_index=0,
                high_watermark=image.offset + 1, voters=(), failure=self.state_machine.failure,
                tick_lag_seconds=CALL_TIMEOUT, tick_lag_limit_seconds=0.0)
        return status_from_json(value, high_watermark=image.offset + 1,
                                failure=self.state_machine.failure)

    @property
    def ticks(self) -> TickReport:
        """The Raft process's tick counts, read from it (its main thread answers)."""
        value = self._call("ticks")
        return TickReport(int(value["stalls"]), float(value["longest_stall"]),
                          tuple(int(count) for count in value["gap_counts"]),
                          float(value["gap_sum"]))

    @property
    def dumps_written(self) -> int:
        return int(self._call("dumps_written"))

    def transport_closed_counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self._call("transport_closed_counts").items()}

    def transport_message_counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self._call("transport_message_counts").items()}

    def force_compaction(self) -> None:
        self._call("force_compaction")

    def add_apply_listener(self, listener: Callable[[], None]) -> None:
        self._apply_listeners.append(listener)

    def add_leadership_listener(self, listener: Callable[[bool], None]) -> None:
        self._leadership_listeners.append(listener)

    def close(self, timeout: float = 15.0) -> None:
        """Closes the channel; the Raft process closes its node and exits (killed after
        ``timeout`` seconds if it has not)."""
        if self._closing:
            return
        self._closing = True
        self._channel.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            logger.error("the Raft process %d did not stop within %.0f s: killed",
                         self.process.pid, timeout)
            self.process.kill()
            self.process.wait(5)


class RemoteMembership:
    """The voters of the Raft process's node, and changes to them (``membership.py``'s
    QuorumMembership, over the channel)."""

    def __init__(self, log: RaftProcessLog) -> None:
        self._log = log
        self.self_address = log.settings.address
        self.directory = log.directory

    def addresses(self) -> list[str]:
        return [str(address) for address in self._log._call("addresses")]

    def voters(self) -> list[Voter]:
        return [Voter(**voter) for voter in self._log._call("voters")]

    def add(self, address: str) -> Future[None]:
        return self._change("add", address)

    def remove(self, address: str) -> Future[None]:
        return self._change("remove", address)

    def _change(self, operation: str, address: str) -> Future[None]:
        done: Future[None] = Future()

        def settled(reply: Future[dict[str, Any]]) -> None:
            error = reply.exception()
            if error is not None:
                done.set_exception(error)
                return
            reason = reply.result().get("reason")
            if reason is None and "error" not in reply.result():
                done.set_result(None)
            else:
                done.set_exception(ProposalError(str(reason or reply.result()["error"])))

        self._log._call_async(operation, address).add_done_callback(settled)
        return done

    def hand_over_leadership(self) -> None:
        self._log._call_async("hand_over_leadership")


def _state_of(value: list[Any]) -> tuple[bool, int | None, int]:
    leader, leader_id, epoch = value
    return bool(leader), None if leader_id is None else int(leader_id), int(epoch)


def _call_safely(listener: Callable[..., None], *args: Any) -> None:
    try:
        listener(*args)
    except Exception:  # a listener must never take the channel's reader down
        logger.exception("a Raft listener failed")
