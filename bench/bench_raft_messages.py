"""The cost of framing one Raft message: pysyncobj's (pickle 2, zlib, Fernet) against a sealed
one (pickle 5, AES-256-GCM: ``controller/raft/peer_cipher.py``), on one core.

Typical messages, built as pysyncobj 0.3.17 builds them (``syncobj.py``): an AppendEntries with
1 and with 100 small entries (each a chunkraft entry of one createTopics batch: a TopicRecord
and a PartitionRecord, wrapped as pysyncobj wraps a call of ``commit_batches``), an empty one
(a heartbeat) and a follower's acknowledgement (``next_node_idx``). Each travels as on a
connection after the handshake: ``(random key, message)``. Per message: the µs to frame it for
sending and to read it back, and the bytes on the wire (4-byte length prefix included). Each
figure is the best of --repeat runs of --count messages, so a noisy neighbour lowers the
spread, not the result.

Prints one JSON line per message and a markdown table; ``--save`` also appends the table to
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import struct
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pysyncobj.pickle as pysyncobj_pickle
from pysyncobj.encryptor import getEncryptor

from _report import append_section, emit
from chunkraft.controller.raft.entry import ProposedBatch, encode_entry
from chunkraft.controller.raft.peer_cipher import PeerCipher
from chunkraft.controller.raft.sealed_messages import open_message, seal_message
from chunkraft.controller.raft.transport_limits import DEFAULT_MAX_MESSAGE_BYTES
from chunkraft.records import PartitionRecord, TopicRecord, encode_record

PASSWORD = "bench-raft-messages"
RAND_KEY = os.urandom(32)  # the peer's key every message of a connection carries
_LENGTH = struct.Struct("i")
TERM = 7


def command(n: int) -> bytes:
    """The journal command of one createTopics write, as pysyncobj stores a replicated call:
    the command type byte (REGULAR) and the pickled ``(method id, (payload,))``."""
    topic_id = uuid.UUID(int=n + 1)
    records = (encode_record(TopicRecord(name=f"orders-{n}", topic_id=topic_id)),
               encode_record(PartitionRecord(partition_id=0, topic_id=topic_id,
                                             replicas=(1, 2, 3), isr=(1, 2, 3), leader=1,
                                             leader_epoch=0, partition_epoch=0)))
    payload = encode_entry([ProposedBatch(uuid.uuid4().bytes, n, TERM, 1_763_700_000_000 + n,
                                          records, b'{"topics":[{"error_code":0}]}')])
    return b"\x00" + bytes(pysyncobj_pickle.dumps((0, (payload,))))


def append_entries(count: int, first_index: int = 10_000) -> dict[str, Any]:
    """The leader's AppendEntries carrying ``count`` entries (0: a heartbeat)."""
    return {"type": "append_entries", "term": TERM, "commit_index": first_index - 1,
            "entries": [(command(n), first_index + n, TERM) for n in range(count)],
            "prevLogIdx": first_index - 1, "prevLogTerm": TERM}


def typical_messages() -> dict[str, dict[str, Any]]:
    return {
        "append_entries, 1 entry": append_entries(1),
        "append_entries, 100 entries": append_entries(100),
        "heartbeat (append_entries, no entry)": append_entries(0),
        "next_node_idx (acknowledgement)": {"type": "next_node_idx", "next_node_idx": 10_001,
                                            "reset": False, "success": True},
    }


@dataclass(frozen=True)
class Framing:
    """One wire format: ``send`` frames ``(key, message)``, ``receive`` reads it back."""

    name: str
    send: Callable[[Any], bytes]
    receive: Callable[[bytes], Any]


def framings(password: str = PASSWORD) -> list[Framing]:
    fernet = getEncryptor(password)
    cipher = PeerCipher(password, max_token_bytes=DEFAULT_MAX_MESSAGE_BYTES)

    def fernet_send(message: Any) -> bytes:
        # pysyncobj's TcpConnection.send, stamped with its monotonic clock.
        data: bytes = fernet.encrypt_at_time(
            zlib.compress(pysyncobj_pickle.dumps(message), 3), int(time.monotonic()))
        return _LENGTH.pack(len(data)) + data

    def fernet_receive(frame: bytes) -> Any:
        data = frame[_LENGTH.size:]
        fernet.extract_timestamp(data)  # pysyncobj reads it first, then decrypts
        return pysyncobj_pickle.loads(zlib.decompress(fernet.decrypt(data)))

    def sealed_send(message: Any) -> bytes:
        data = seal_message(cipher, message)
        return _LENGTH.pack(len(data)) + data

    def sealed_receive(frame: bytes) -> Any:
        return open_message(cipher, frame[_LENGTH.size:])[1]

    return [Framing("fernet", fernet_send, fernet_receive),
            Framing("sealed", sealed_send, sealed_receive)]


def best_us(run: Callable[[], None], count: int, repeat: int) -> float:
    """µs per message: the best of ``repeat`` runs of ``count`` calls of ``run``."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(count):
            run()
        best = min(best, time.perf_counter() - started)
    return best / count * 1e6


def measure(name: str, message: dict[str, Any], formats: list[Framing], count: int,
            repeat: int) -> dict[str, Any]:
    row: dict[str, Any] = {"bench": "raft_messages", "message": name}
    wrapped = (RAND_KEY, message)
    for framing in formats:
        frame = framing.send(wrapped)
        assert framing.receive(frame) == wrapped, framing.name
        row[f"{framing.name}_bytes"] = len(frame)

        def send(framing: Framing = framing) -> None:
            framing.send(wrapped)

        def receive(framing: Framing = framing, frame: bytes = frame) -> None:
            framing.receive(frame)

        row[f"{framing.name}_send_us"] = round(best_us(send, count, repeat), 2)
        row[f"{framing.name}_receive_us"] = round(best_us(receive, count, repeat), 2)
    return row


def ratio(theirs: float, ours: float) -> str:
    return f"{theirs / ours:.1f}x" if ours else "-"


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a table: each format's send and receive µs, bytes, and how many times
    cheaper sealing is (pysyncobj / sealed)."""
    table = ["| message | Fernet send µs | sealed send µs | Fernet receive µs | "
             "sealed receive µs | Fernet bytes | sealed bytes | send, receive: x cheaper |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append(
            f"| {r['message']} | {r['fernet_send_us']} | {r['sealed_send_us']} | "
            f"{r['fernet_receive_us']} | {r['sealed_receive_us']} | {r['fernet_bytes']:,} | "
            f"{r['sealed_bytes']:,} | {ratio(r['fernet_send_us'], r['sealed_send_us'])}, "
            f"{ratio(r['fernet_receive_us'], r['sealed_receive_us'])} |")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=2_000, help="messages per run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--save", action="store_true", help="append the table to RESULTS.md")
    args = parser.parse_args()

    formats = framings()
    rows = []
    for name, message in typical_messages().items():
        row = measure(name, message, formats, args.count, args.repeat)
        emit(row)
        rows.append(row)
    table = markdown(rows)
    print("\n".join(table))
    if args.save:
        append_section("Raft message framing: pysyncobj's Fernet against sealed (AES-256-GCM), "
                       f"one core, best of {args.repeat} x {args.count:,} messages", table)


if __name__ == "__main__":
    main()
