"""bench_raft_messages.py: its messages are pysyncobj's, both framings read back what they
framed, and the table shows one row per message."""

from __future__ import annotations

import struct

import pysyncobj.pickle as pysyncobj_pickle
import pytest

from bench_raft_messages import (
    RAND_KEY,
    Framing,
    framings,
    markdown,
    measure,
    ratio,
    typical_messages,
)
from chunkraft.controller.raft.entry import decode_entry
from chunkraft.controller.raft.peer_cipher import SEALED_MARKER


@pytest.fixture(scope="module")
def formats() -> list[Framing]:
    return framings()


def test_the_messages_are_shaped_as_pysyncobj_sends_them() -> None:
    messages = typical_messages()
    counts = [len(m.get("entries", ())) for m in messages.values()]
    assert counts == [1, 100, 0, 0]
    for message in messages.values():
        if message["type"] != "append_entries":
            assert set(message) == {"type", "next_node_idx", "reset", "success"}
            continue
        assert {"term", "commit_index", "entries", "prevLogIdx", "prevLogTerm"} <= set(message)
        for command, index, term in message["entries"]:
            assert index > message["prevLogIdx"] and term == message["term"]
            # pysyncobj's REGULAR command byte, then the pickled call of commit_batches.
            assert command[0] == 0
            method, (payload,) = pysyncobj_pickle.loads(command[1:])
            assert method == 0
            (batch,) = decode_entry(payload)
            assert len(batch.records) == 2


def test_each_framing_reads_back_what_it_framed(formats: list[Framing]) -> None:
    message = (RAND_KEY, typical_messages()["append_entries, 100 entries"])
    frames = {f.name: f.send(message) for f in formats}
    for framing in formats:
        frame = frames[framing.name]
        assert struct.unpack_from("i", frame)[0] == len(frame) - 4
        assert framing.receive(frame) == message
    assert frames["fernet"][4:5] == b"g"  # a Fernet token
    assert frames["sealed"][4] == SEALED_MARKER


def test_a_row_holds_both_formats_and_the_table_one_line_per_message(
        formats: list[Framing]) -> None:
    rows = [measure(name, message, formats, count=3, repeat=1)
            for name, message in typical_messages().items()]
    for row in rows:
        for name in ("fernet", "sealed"):
            assert row[f"{name}_bytes"] > 0
            assert row[f"{name}_send_us"] > 0 and row[f"{name}_receive_us"] > 0
    table = markdown(rows)
    assert len(table) == 2 + len(rows)
    assert table[2].startswith("| append_entries, 1 entry |")
    assert all(line.count("|") == table[0].count("|") for line in table)
    assert ratio(10.0, 2.5) == "4.0x" and ratio(1.0, 0.0) == "-"
