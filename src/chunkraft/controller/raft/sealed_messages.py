"""Sealed Raft messages: the offer that switches a connection to them, and their framing.

A connection of ``transport_guard.py`` sends pysyncobj's format (pickle protocol 2, zlib,
Fernet) until the peer has said it reads sealed messages, and reads both formats always:

- after its first send on an authenticated connection, each side sends :data:`SEALED_OFFER`,
  itself in pysyncobj's format, once per connection;
- a side that receives the offer seals everything it sends on that connection from then on
  (:func:`seal_message`: pickle protocol 5 of pysyncobj's ``(random key, message)`` pair, sealed
  by :class:`~chunkraft.controller.raft.peer_cipher.PeerCipher`; no zlib, the cost it adds to
  every small message is what sealing saves), and swallows the offer.

An older node never sends the offer, so nobody seals to it; the offer it receives reaches
pysyncobj's ``SyncObj.__onMessageReceived`` (through chunkraft's ``DurableSyncObj``, whose
checks only look at term fields and the ``apply_command`` / pre-vote types), which compares
``message['type']`` with each type it knows and, matching none, does nothing: a dict with an
unknown ``type`` is ignored harmlessly by pysyncobj 0.3.17 and by every chunkraft before this
one. So a quorum upgrades one node at a time: two upgraded nodes seal between themselves and
speak Fernet with the others. The offer is sent after the first authenticated send, not on the
handshake's first message: pysyncobj's admin utility (``TcpUtility``) takes the first message
after the key exchange as its command's answer and would take an offer for it.
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Mapping
from typing import Any

from chunkraft.controller.raft.peer_cipher import PeerCipher

__all__ = [
    "OFFER_TYPE",
    "OLDER_FORMAT_ENV",
    "SEALED_OFFER",
    "SEALED_VERSION",
    "is_offer",
    "offers_our_version",
    "open_message",
    "peer_cipher_for",
    "seal_message",
]

logger = logging.getLogger(__name__)

SEALED_VERSION = 1
"""The sealed format this node reads (the token of ``peer_cipher.py``, pickle protocol 5)."""

OFFER_TYPE = "chunkraft_reads_sealed"

SEALED_OFFER: Mapping[str, Any] = {"type": OFFER_TYPE, "version": SEALED_VERSION}
""""I read sealed messages of this version": sent once per connection, in pysyncobj's format."""

OLDER_FORMAT_ENV = "_CHUNKRAFT_TEST_OLDER_PEER_FORMAT"
"""A test hook, not a setting: ``1`` in a controller's environment makes its Raft transport
behave as a node from before sealing (no offer sent, no sealed message read, an offer received
handed to pysyncobj as an older node would), so a rolling upgrade can be tested with real
processes. Read only by :func:`peer_cipher_for`. Setting it in production only costs speed:
Fernet still encrypts and the password still authenticates."""


def peer_cipher_for(password: str | bytes | None, max_token_bytes: int) -> PeerCipher | None:
    """The cipher a transport seals with: None without a password (pysyncobj does not encrypt
    either, so nothing is sealed) or under :data:`OLDER_FORMAT_ENV`."""
    if password is None:
        return None
    if os.environ.get(OLDER_FORMAT_ENV) == "1":
        logger.warning("Raft transport: %s=1, this node neither seals nor reads sealed "
                       "messages (a test hook)", OLDER_FORMAT_ENV)
        return None
    return PeerCipher(password, max_token_bytes=max_token_bytes)


def is_offer(message: Any) -> bool:
    """Whether ``message`` is an offer (of any version)."""
    return isinstance(message, dict) and message.get("type") == OFFER_TYPE


def offers_our_version(message: Any) -> bool:
    """Whether the offer ``message`` says the peer reads the sealed format this node writes
    (a later node would offer each version it reads, so another version is not ours)."""
    return is_offer(message) and message.get("version") == SEALED_VERSION


def seal_message(cipher: PeerCipher, message: Any) -> bytes:
    """``message`` (pysyncobj's ``(random key, message)`` pair) as a sealed token."""
    return cipher.seal(pickle.dumps(message, protocol=5))


def open_message(cipher: PeerCipher, token: bytes) -> tuple[int, Any]:
    """``(timestamp_ms, message)`` of a sealed token; raises ``SealedMessageError`` if it does
    not open. Only a peer holding the password can seal what is unpickled here, the trust
    pysyncobj's own format places in Fernet."""
    timestamp, plaintext = cipher.open_stamped(token)
    return timestamp, pickle.loads(plaintext)
