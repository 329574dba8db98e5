"""The channel between a controller's API process and its Raft process.

One Unix stream socket (a socketpair made by the API process), messages framed as::

    u32 length (of what follows) | u8 kind | body

Committed entries and proposals travel as the entry's own bytes (``entry.py``'s encoding, the
one that is in the journal), so the channel adds no encoding of records; control messages are
small JSON objects. Nothing is ever pickled. Both directions are FIFO: the Raft process sends an
entry, then the result of the proposal that wrote it, then the dump request of the image after
it, so the API process applies, answers and dumps in Raft order without any further sequencing.

Sending is thread-safe (one lock per direction); each direction has one reader thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import socket
import struct
import threading
from typing import Any

from chunkraft.controller.raft.log import QuorumStatus, VoterStatus
from chunkraft.errors import ChunkraftError

__all__ = ["Channel", "ChannelClosed", "Kind", "status_from_json", "status_to_json"]

_HEADER = struct.Struct(">IB")
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""A message above this is a bug or a corruption: the channel closes on it."""
SOCKET_BUFFER_BYTES = 4 * 1024 * 1024
"""Kernel buffers on both ends, so a sender (the Raft tick thread shipping an entry) never waits
on a reader that is busy for a moment."""


class Kind(enum.IntEnum):
    """What a message is; the comment says who sends it."""

    HELLO = 1  # Raft -> API: the node is built (its files checked, its port bound)
    APPLIED = 2  # Raft -> API: a committed entry, in order (its bytes)
    RESULT = 3  # Raft -> API: {"id", "seq"} or {"id", "error"} for a proposal or a change
    LEADERSHIP = 4  # Raft -> API: {"state": [...], "leader": bool}: leadership changed
    STATE = 5  # Raft -> API: {"state": [is_leader, leader_id, epoch]} when it changed
    DUMP = 6  # Raft -> API: write the dump of the image after the last APPLIED
    RESTORE = 7  # Raft -> API: {"path"}: replace the image with this dump
    REPLY = 8  # Raft -> API: {"id", "value"} for a CALL
    SETTINGS = 20  # API -> Raft: the Raft settings (the first message)
    PROPOSE = 21  # API -> Raft: u64 id | the entry's bytes
    CALL = 22  # API -> Raft: {"id", "method", "args"}
    DUMP_DONE = 23  # API -> Raft: {"offset", "epoch"} or {"failed": true}
    CONTROLLERS = 24  # API -> Raft: the controllers' registrations (records, u32-framed)


class ChannelClosed(ChunkraftError):
    """The other process closed its end, or died."""


class Channel:
    """Framed messages over a connected stream socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            with contextlib.suppress(OSError):  # else the kernel's limit applies
                sock.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER_BYTES)
        self._send_lock = threading.Lock()
        self.sent_messages = 0
        self.sent_bytes = 0

    def send(self, kind: Kind, body: bytes = b"") -> None:
        """Sends one message whole; raises ChannelClosed if the other end is gone."""
        frame = _HEADER.pack(len(body) + 1, kind) + body if len(body) < 65536 else None
        try:
            with self._send_lock:
                if frame is not None:
                    self.sock.sendall(frame)
                else:  # a large body is not copied into the frame
                    self.sock.sendall(_HEADER.pack(len(body) + 1, kind))
                    self.sock.sendall(body)
                self.sent_messages += 1
                self.sent_bytes += len(body) + _HEADER.size
        except OSError as error:
            raise ChannelClosed(f"the channel is closed: {error}") from None

    def send_json(self, kind: Kind, value: Any) -> None:
        self.send(kind, json.dumps(value, separators=(",", ":")).encode())

    def receive(self) -> tuple[Kind, bytes]:
        """The next message; raises ChannelClosed at the end of the stream."""
        length, kind = _HEADER.unpack(self._exactly(_HEADER.size))
        if not 1 <= length <= MAX_MESSAGE_BYTES:
            raise ChannelClosed(f"a message of {length} bytes: the channel is corrupt")
        body = self._exactly(length - 1) if length > 1 else b""
        try:
            return Kind(kind), body
        except ValueError:
            raise ChannelClosed(f"unknown message kind {kind}: the channel is corrupt") from None

    def _exactly(self, count: int) -> bytes:
        parts = []
        while count:
            try:
                part = self.sock.recv(min(count, 1024 * 1024))
            except OSError as error:
                raise ChannelClosed(f"the channel is closed: {error}") from None
            if not part:
                raise ChannelClosed("the other process closed the channel")
            parts.append(part)
            count -= len(part)
        return b"".join(parts)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def status_to_json(status: QuorumStatus) -> dict[str, Any]:
    return dataclasses.asdict(status)


def status_from_json(value: dict[str, Any], *, high_watermark: int,
                     failure: str | None) -> QuorumStatus:
    """The Raft process's status with what only the image's process knows put in."""
    fields = dict(value)
    fields["voters"] = tuple(VoterStatus(**voter) for voter in fields["voters"])
    fields["high_watermark"] = high_watermark
    fields["failure"] = failure
    return QuorumStatus(**fields)
