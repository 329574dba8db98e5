"""The framed channel between the API process and the Raft process."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from chunkraft.controller.raft.log import QuorumStatus, VoterStatus
from chunkraft.controller.raft.process_channel import (
    Channel,
    ChannelClosed,
    Kind,
    status_from_json,
    status_to_json,
)


@pytest.fixture
def sockets() -> Iterator[tuple[socket.socket, socket.socket]]:
    one, two = socket.socketpair()
    with one, two:
        yield one, two


@pytest.fixture
def channels(sockets: tuple[socket.socket, socket.socket]) -> tuple[Channel, Channel]:
    return Channel(sockets[0]), Channel(sockets[1])


def test_messages_arrive_whole_and_in_order_small_and_large(
        channels: tuple[Channel, Channel]) -> None:
    sender, receiver = channels
    large = bytes(range(256)) * 4096  # 1 MiB: sent without copying into one frame
    bodies = [b"", b"x", large, b"after"]

    def send() -> None:
        for body in bodies:
            sender.send(Kind.APPLIED, body)

    thread = threading.Thread(target=send)
    thread.start()
    received = [receiver.receive() for _ in bodies]
    thread.join(10)
    assert received == [(Kind.APPLIED, body) for body in bodies]
    assert sender.sent_messages == 4


def test_json_messages_round_trip(channels: tuple[Channel, Channel]) -> None:
    sender, receiver = channels
    sender.send_json(Kind.RESULT, {"id": 7, "seq": 3})
    kind, body = receiver.receive()
    assert kind is Kind.RESULT and body == b'{"id":7,"seq":3}'


def test_the_end_of_the_stream_is_channel_closed(channels: tuple[Channel, Channel]) -> None:
    sender, receiver = channels
    sender.send(Kind.STATE, b"{}")
    sender.close()
    assert receiver.receive() == (Kind.STATE, b"{}")
    with pytest.raises(ChannelClosed, match="closed the channel"):
        receiver.receive()


def test_a_message_cut_in_the_middle_is_channel_closed(
        sockets: tuple[socket.socket, socket.socket]) -> None:
    one, two = sockets
    one.sendall(struct.pack(">IB", 100, Kind.APPLIED) + b"only part")
    one.shutdown(socket.SHUT_WR)
    with pytest.raises(ChannelClosed):
        Channel(two).receive()


@pytest.mark.parametrize("length", [0, 300 * 1024 * 1024])
def test_an_impossible_length_closes_the_channel(
        length: int, sockets: tuple[socket.socket, socket.socket]) -> None:
    one, two = sockets
    one.sendall(struct.pack(">IB", length, Kind.APPLIED))
    with pytest.raises(ChannelClosed, match="corrupt"):
        Channel(two).receive()


def test_an_unknown_kind_closes_the_channel(
        sockets: tuple[socket.socket, socket.socket]) -> None:
    one, two = sockets
    one.sendall(struct.pack(">IB", 1, 99))
    with pytest.raises(ChannelClosed, match="unknown message kind 99"):
        Channel(two).receive()


def test_sending_on_a_closed_socket_is_channel_closed(channels: tuple[Channel, Channel]) -> None:
    sender, receiver = channels
    receiver.close()
    with pytest.raises(ChannelClosed):
        for _ in range(100):  # the first sends may still fit the buffer
            sender.send(Kind.APPLIED, b"x" * 65536)


def test_a_status_crosses_with_the_image_side_fields_put_in() -> None:
    status = QuorumStatus(
        node_id=2, state="leader", leader_id=2, epoch=5, has_quorum=True, commit_index=9,
        last_applied_index=9, high_watermark=0,
        voters=(VoterStatus(1, "127.0.0.1:1", 9, 0, 12, True),
                VoterStatus(2, "127.0.0.1:2", None, None, None, False)),
        failure=None, tick_lag_seconds=0.01, tick_lag_limit_seconds=0.5,
        leadership_changes=1, incarnation="abc")
    again = status_from_json(status_to_json(status), high_watermark=42, failure="corrupt")
    assert again.voters == status.voters
    assert again.high_watermark == 42 and again.failure == "corrupt"
    assert again.epoch == 5 and again.incarnation == "abc"
