"""The sizes and times that bound a Raft transport (``transport_guard.py``): what a legitimate
peer sends at most, and what a connection may announce before and after it authenticates."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "APPEND_ENTRIES_BATCH_BYTES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "LARGEST_LEGITIMATE_MESSAGE_BYTES",
    "UNAUTHENTICATED_MAX_MESSAGE_BYTES",
    "TransportLimits",
]

_MIB = 1024 * 1024

APPEND_ENTRIES_BATCH_BYTES = 64 * _MIB
"""pysyncobj's ``appendEntriesBatchSizeBytes`` as RaftNode sets it: an AppendEntries carries
entries until their command bytes reach this (so up to this plus one entry), and an entry of
this size or more travels in pieces of this size (see ``node.py`` for why it is this large)."""

LARGEST_LEGITIMATE_MESSAGE_BYTES = 180 * _MIB
"""An upper bound of the largest message a chunkraft peer sends, framed as on the wire.

An AppendEntries holds up to ``2 x APPEND_ENTRIES_BATCH_BYTES`` of commands (a batch just short
of the size plus one entry just short of it; a larger entry goes in pieces). pysyncobj pickles
that (protocol 2: bytes become latin-1 text), compresses it (zlib, level 3) and encrypts it
(Fernet: base64, so 4/3) — at worst 4/3 x 128 MiB x 1.001 + framing, about 171 MiB, for
incompressible commands. Measured (``docs/controller.md``): 64 MiB of 2,000-record
createTopics entries went out as 3.1 MiB, 64 MiB of random 1 MiB entries as 80.5 MiB. A sealed
message (``peer_cipher.py``) is not compressed, and pickle protocol 5 keeps bytes as they are:
at most 128 MiB + pickling + 37 bytes, whatever the commands. Dump transfers go in
64 KiB pieces. ``raft.max.message.bytes`` may not be set below this."""

DEFAULT_MAX_MESSAGE_BYTES = 256 * _MIB
"""Above :data:`LARGEST_LEGITIMATE_MESSAGE_BYTES` with room to spare; only authenticated peers
(who hold the password) can make a node buffer this much."""

UNAUTHENTICATED_MAX_MESSAGE_BYTES = 64 * 1024
"""The largest message accepted before a connection has authenticated. The handshake's two
messages (a 32-byte random key, then a node address, each pickled, compressed and encrypted)
are about 150 and 250 bytes; pysyncobj's admin commands are as small."""


@dataclass(frozen=True, slots=True)
class TransportLimits:
    """The guard's limits (times in seconds); see the module doc for what each one bounds."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_connections_per_address: int = 8
    handshake_timeout: float = 5.0
    message_timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.max_message_bytes < UNAUTHENTICATED_MAX_MESSAGE_BYTES:
            raise ValueError("max_message_bytes must be at least "
                             f"{UNAUTHENTICATED_MAX_MESSAGE_BYTES}")
        if self.max_connections_per_address < 1:
            raise ValueError("max_connections_per_address must be at least 1")
        if self.handshake_timeout <= 0 or self.message_timeout <= 0:
            raise ValueError("timeouts must be positive")
