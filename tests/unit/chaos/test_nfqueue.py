"""nfnetlink_queue's wire format (chunkraft.chaos.nfqueue): requests byte for byte, and
messages as the kernel sends them decoded."""

from __future__ import annotations

import struct

import pytest

from chunkraft.chaos.nfqueue import (
    NetlinkMessage,
    attribute,
    config_message,
    parse_attributes,
    parse_error,
    parse_messages,
    parse_packet,
    verdict_batch_message,
)
from tests.unit.chaos.nfqueue_kernel import ack, kernel_packet, nlmsg


def test_an_attribute_is_padded_to_four_bytes() -> None:
    assert attribute(1, b"\x01\x02\x03") == struct.pack("=HH", 7, 1) + b"\x01\x02\x03\0"
    assert attribute(3, b"\x00\x00\x03\xe8") == struct.pack("=HH", 8, 3) + b"\x00\x00\x03\xe8"
    assert attribute(2, b"") == struct.pack("=HH", 4, 2)


def test_the_bind_request_byte_for_byte() -> None:
    message = config_message(200, seq=1, command=1)
    expected = (struct.pack("=IHHII", 28, 0x0302, 0x1 | 0x4, 1, 0)  # CONFIG, REQUEST | ACK
                + bytes([0, 0]) + struct.pack("!H", 200)              # AF_UNSPEC, V0, queue
                + struct.pack("=HH", 8, 1) + bytes([1, 0]) + struct.pack("!H", 0))
    assert message == expected


def test_the_settings_request_carries_meta_copy_maxlen_and_flags_with_their_mask() -> None:
    message = config_message(7, seq=2, copy_mode=1, maxlen=1000, flags=0x4, flags_mask=0x5)
    (parsed,) = parse_messages(message)
    assert parsed.kind == 0x0302 and parsed.seq == 2
    attrs = parse_attributes(parsed.payload[4:])
    assert attrs == {2: b"\0\0\0\0\x01",            # copy_range 0, NFQNL_COPY_META (packed)
                     3: struct.pack("!I", 1000),
                     5: struct.pack("!I", 0x4),
                     4: struct.pack("!I", 0x5)}
    assert len(message) == 16 + 4 + 12 + 8 + 8 + 8  # the 9-byte params padded to 12


def test_flags_without_a_mask_use_the_flags_as_mask() -> None:
    (parsed,) = parse_messages(config_message(7, seq=3, flags=0x1))
    assert parse_attributes(parsed.payload[4:])[4] == struct.pack("!I", 0x1)


def test_a_batch_verdict_accepts_up_to_an_id() -> None:
    message = verdict_batch_message(200, 0x01020304, seq=9)
    assert message == (struct.pack("=IHHII", 32, 0x0303, 0x1, 9, 0)
                       + bytes([0, 0]) + struct.pack("!H", 200)
                       + struct.pack("=HH", 12, 2) + struct.pack("!II", 1, 0x01020304))


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        config_message(70000, seq=1, command=1)
    with pytest.raises(ValueError):
        config_message(1, seq=1, maxlen=0)


def test_a_queued_packet_is_decoded() -> None:
    (message,) = parse_messages(kernel_packet(200, 77))
    assert message.is_packet
    packet = parse_packet(message)
    assert (packet.queue, packet.packet_id, packet.hw_protocol, packet.hook) == (
        200, 77, 0x0800, 3)


def test_several_messages_in_one_datagram_and_a_cut_one() -> None:
    data = kernel_packet(1, 5) + ack(4) + kernel_packet(1, 6)
    messages = parse_messages(data)
    assert [m.kind for m in messages] == [0x0300, 2, 0x0300]
    assert [parse_packet(m).packet_id for m in messages if m.is_packet] == [5, 6]
    with pytest.raises(ValueError):
        parse_messages(data[:-3])
    with pytest.raises(ValueError):
        parse_attributes(struct.pack("=HH", 40, 1) + b"\0" * 4)


def test_acks_and_errors() -> None:
    assert parse_error(parse_messages(ack(4))[0]) == 0
    assert parse_error(parse_messages(ack(4, 16))[0]) == 16  # EBUSY
    with pytest.raises(ValueError):
        parse_error(NetlinkMessage(0x0300, 0, 0, b""))
    with pytest.raises(ValueError):
        parse_packet(NetlinkMessage(2, 0, 0, b"\0" * 20))
    without_header = nlmsg(0x0300, 0, 0, struct.pack("!BBH", 2, 0, 1))
    with pytest.raises(ValueError, match="packet header"):
        parse_packet(parse_messages(without_header)[0])
