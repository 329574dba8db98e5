"""The Raft process: a controller's Raft node (pysyncobj, its journal, transport guard, term and
vote) in a process of its own, started by the API process (``process_log.RaftProcessLog``).

No GIL holder of the API (a request, a long validation, a Kafka connection) can delay a tick
here, so heartbeats and elections keep their timing whatever the API does. The image is held
by the API process: each committed entry is shipped to it in order (:class:`ChannelImageHost`),
and a dump is written there, where the image is, at the entry pysyncobj asked for.

The process stops when its channel closes (the API process closed it, or died: kill -9
included), after closing the node. It ignores SIGINT and SIGTERM, which the API process
handles for both (a Ctrl-C reaches the whole process group): stopping the API first keeps the
controller a single unit. Run as ``python -m chunkraft.controller.raft.raft_process FD``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import json
import logging
import os
import signal
import socket
import struct
import sys
import uuid
from pathlib import Path
from typing import Any

from chunkraft.controller.image.controllers import ControllersImage, replay_controller_registration
from chunkraft.controller.raft.dump import entry_to_json
from chunkraft.controller.raft.image_host import DumpRequest, DumpWritten
from chunkraft.controller.raft.membership import QuorumMembership
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.controller.raft.process_channel import Channel, ChannelClosed, Kind, status_to_json
from chunkraft.controller.raft.transport_guard import TransportLimits
from chunkraft.records import ControllerRegistrationRecord, decode_record, encode_record

__all__ = ["ChannelImageHost", "main", "settings_from_json", "settings_to_json"]

logger = logging.getLogger(__name__)

_ID = struct.Struct(">Q")
_LENGTH = struct.Struct(">I")


def settings_to_json(settings: RaftSettings) -> dict[str, Any]:
    value = dataclasses.asdict(settings)
    value["voters"] = {str(node): address for node, address in settings.voters.items()}
    value["data_dir"] = str(settings.data_dir)
    value["cluster_id"] = str(settings.cluster_id)
    value["snapshot_export_dir"] = (None if settings.snapshot_export_dir is None
                                    else str(settings.snapshot_export_dir))
    return value


def settings_from_json(value: dict[str, Any]) -> RaftSettings:
    fields = dict(value)
    fields["voters"] = {int(node): str(address) for node, address in value["voters"].items()}
    fields["data_dir"] = Path(value["data_dir"])
    fields["cluster_id"] = uuid.UUID(value["cluster_id"])
    export = value["snapshot_export_dir"]
    fields["snapshot_export_dir"] = None if export is None else Path(export)
    fields["transport"] = TransportLimits(**value["transport"])
    return RaftSettings(**fields)


def encode_controllers(controllers: ControllersImage) -> bytes:
    """The registrations as records, each u32-framed (what CONTROLLERS carries)."""
    parts = []
    for record in controllers:
        encoded = encode_record(record)
        parts.append(_LENGTH.pack(len(encoded)) + encoded)
    return b"".join(parts)


def decode_controllers(body: bytes) -> ControllersImage:
    image = ControllersImage.EMPTY
    position = 0
    while position < len(body):
        (length,) = _LENGTH.unpack_from(body, position)
        position += _LENGTH.size
        record = decode_record(body[position:position + length])
        position += length
        if isinstance(record, ControllerRegistrationRecord):
            image = replay_controller_registration(image, record)
    return image


class ChannelImageHost:
    """The image host of the Raft process: ships entries, dump requests and restores to the API
    process, which holds the image. Called from the tick thread; never waits for the API."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._applied = 0
        self._written: DumpWritten | bool | None = None
        self._restores = itertools.count(1)
        self.controllers_image = ControllersImage.EMPTY

    def apply(self, payload: bytes) -> int:
        self._applied += 1
        # A closed channel: the API process is gone, and this one stops once its reader sees it.
        with contextlib.suppress(ChannelClosed):
            self._channel.send(Kind.APPLIED, payload)
        return self._applied  # the entry's number on the channel: the API maps it to outcomes

    def begin_dump(self, request: DumpRequest) -> bool:
        self._written = None
        return _send_quietly(self._channel, Kind.DUMP, {
            "last": entry_to_json(request.last_entry),
            "previous": entry_to_json(request.previous_entry),
            "members": list(request.members), "member_ids": request.member_ids,
            "target": str(request.target)})

    def dump_done(self, answer: dict[str, Any]) -> None:
        """The API process's answer to a DUMP (the channel's reader thread)."""
        self._written = (False if answer.get("failed")
                         else DumpWritten(int(answer["offset"]), int(answer["epoch"])))

    def dump_written(self) -> DumpWritten | bool | None:
        return self._written

    def restore(self, path: Path) -> None:
        # pysyncobj may rename a newer dump over this one before the API process reads it: the
        # API reads a link of its own, and removes it once loaded.
        link = path.with_name(f"{path.name}.restore-{os.getpid()}-{next(self._restores)}")
        link.unlink(missing_ok=True)
        os.link(path, link)
        _send_quietly(self._channel, Kind.RESTORE, {"path": str(link)})

    def controllers(self) -> ControllersImage:
        return self.controllers_image

    def failure(self) -> str | None:
        return None  # the API process knows; it puts its own into the status

    def mark_failed(self, why: str) -> None:
        logger.critical("%s", why)

    def high_watermark(self) -> int:
        return 0  # the API process puts its own into the status


class _Server:
    """Serves the API process's messages (the main thread) and pushes the node's state."""

    def __init__(self, channel: Channel, node: RaftNode, host: ChannelImageHost) -> None:
        self.channel = channel
        self.node = node
        self.host = host
        self._state: tuple[bool, int | None, int] | None = None

    def state(self) -> tuple[bool, int | None, int]:
        return (self.node.is_leader(), self.node.leader_id(), self.node.epoch())

    def push_state(self) -> None:
        """After each tick: the leader state, if it changed (the API reads it per request)."""
        state = self.state()
        if state == self._state:
            return
        self._state = state
        _send_quietly(self.channel, Kind.STATE, {"state": list(state)})

    def on_leadership(self, leader: bool) -> None:
        state = self.state()
        self._state = state
        _send_quietly(self.channel, Kind.LEADERSHIP, {"state": list(state), "leader": leader})

    def serve(self) -> None:
        while True:
            kind, body = self.channel.receive()
            if kind is Kind.PROPOSE:
                (request_id,) = _ID.unpack_from(body)
                self._propose(request_id, body[_ID.size:])
            elif kind is Kind.CALL:
                self._call(json.loads(body))
            elif kind is Kind.DUMP_DONE:
                self.host.dump_done(json.loads(body))
            elif kind is Kind.CONTROLLERS:
                self.host.controllers_image = decode_controllers(body)
            else:
                logger.warning("the Raft process ignores a %s message", kind.name)

    def _propose(self, request_id: int, payload: bytes) -> None:
        def callback(result: Any, error: int) -> None:
            if error == 0:
                _send_quietly(self.channel, Kind.RESULT, {"id": request_id, "seq": result})
            else:
                _send_quietly(self.channel, Kind.RESULT, {"id": request_id, "error": error})

        self.node.propose_encoded(payload, callback)

    def _call(self, call: dict[str, Any]) -> None:
        method, args, call_id = call["method"], call.get("args", []), call["id"]
        try:
            value = self._answer(method, args, call_id)
        except Exception as error:  # an answer, never a dead Raft process
            logger.exception("the Raft process failed to answer %s", method)
            self.channel.send_json(Kind.REPLY, {"id": call_id, "error": str(error)})
            return
        if value is not _LATER:
            self.channel.send_json(Kind.REPLY, {"id": call_id, "value": value})

    def _answer(self, method: str, args: list[Any], call_id: int) -> Any:
        node = self.node
        membership: QuorumMembership = node.membership
        if method == "status":
            return status_to_json(node.status())
        if method == "voters":
            return [dataclasses.asdict(voter) for voter in membership.voters()]
        if method == "addresses":
            return membership.addresses()
        if method == "transport_closed_counts":
            return node.transport_closed_counts()
        if method == "transport_message_counts":
            return node.transport_message_counts()
        if method == "ticks":
            ticks = node.ticks
            # Copied first: the tick thread goes on counting while this (main) thread encodes.
            return {"stalls": ticks.stalls, "longest_stall": ticks.longest_stall,
                    "gap_counts": list(ticks.gap_counts), "gap_sum": ticks.gap_sum}
        if method == "hand_over_leadership":
            membership.hand_over_leadership()
            return None
        if method == "force_compaction":
            node.force_compaction()
            return None
        if method == "dumps_written":
            return node.dumps_written
        if method in ("add", "remove"):
            change = membership.add(args[0]) if method == "add" else membership.remove(args[0])

            def settled(future: Any) -> None:
                error = future.exception()
                reason = getattr(error, "reason", None if error is None else str(error))
                _send_quietly(self.channel, Kind.REPLY, {"id": call_id, "value": None,
                                                         "reason": reason})

            change.add_done_callback(settled)
            return _LATER
        raise ValueError(f"unknown call {method!r}")


_LATER = object()


def _send_quietly(channel: Channel, kind: Kind, value: Any) -> bool:
    """Sends from a Raft thread: a closed channel only means this process stops soon (its
    reader sees the end), so it must not raise into pysyncobj."""
    try:
        channel.send_json(kind, value)
    except ChannelClosed:
        return False
    return True


def main(argv: list[str]) -> int:
    """Serves the channel on file descriptor ``argv[0]`` until it closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pysyncobj").setLevel(logging.WARNING)
    channel = Channel(socket.socket(fileno=int(argv[0])))
    kind, body = channel.receive()
    if kind is not Kind.SETTINGS:
        logger.critical("the Raft process expected its settings first, got %s", kind.name)
        return 2
    message = json.loads(body)
    settings = settings_from_json(message["settings"])
    host = ChannelImageHost(channel)
    host.controllers_image = decode_controllers(bytes.fromhex(message["controllers"]))
    try:
        node = RaftNode(settings, host)
    except Exception as error:
        # The API process prints it (its start fails with this message).
        channel.send_json(Kind.HELLO, {"error": str(error)})
        return 1
    server = _Server(channel, node, host)
    node.add_leadership_listener(server.on_leadership)
    node.add_tick_listener(server.push_state)
    gc.freeze()  # what was imported and built is long-lived
    channel.send_json(Kind.HELLO, {"pid": os.getpid(), "state": list(server.state())})
    try:
        server.serve()
    except ChannelClosed as closed:
        logger.info("the Raft process of node %d stops: %s", settings.node_id, closed)
    finally:
        node.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
