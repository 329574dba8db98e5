"""PeerCipher: AES-256-GCM for the Raft messages controllers send one another.

pysyncobj encrypts every message with Fernet (AES-128-CBC, then HMAC-SHA256, then base64: a
message grows by a third and costs two passes and an encoding). A sealed message is one
AES-GCM pass instead, authenticated and encrypted at once, and travels as raw bytes::

    token := 0xC1 | u64 timestamp_ms (big-endian) | nonce[12] | ciphertext | tag[16]
    nonce := prefix[8] (random, per PeerCipher) | u32 counter (big-endian)

The marker and the timestamp are GCM's associated data, so they are authenticated too. The
transport (``transport_guard.py``) decides who receives sealed messages; this module only seals
and opens.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from chunkraft.errors import SealedMessageError

__all__ = ["KDF_ITERATIONS", "SEALED_MARKER", "TOKEN_OVERHEAD", "PeerCipher", "is_sealed"]

SEALED_MARKER = 0xC1
"""The first byte of every sealed token. A Fernet token is urlsafe base64 of a version byte
0x80, so its first byte is always ``g`` (0x67), never 0xC1: the two formats are told apart by
their first byte, on one connection, without negotiation."""

KDF_ITERATIONS = 100_000
"""PBKDF2-HMAC-SHA256 iterations, as pysyncobj's Fernet key uses."""

# A salt of our own: pysyncobj derives its Fernet key from the same password with its salt
# (``encryptor.SALT``), and the AES-GCM key must not be that key or be derivable from it.
_SALT = b"chunkraft peer cipher AES-256-GCM v1"

_HEADER = struct.Struct(">BQ")  # marker, timestamp: the associated data
_PREFIX_BYTES = 8
_NONCE_BYTES = 12
_TAG_BYTES = 16
_COUNTER_END = 1 << 32

TOKEN_OVERHEAD = _HEADER.size + _NONCE_BYTES + _TAG_BYTES
"""Bytes a token adds to its plaintext (37)."""


def is_sealed(data: bytes | bytearray | memoryview) -> bool:
    """Whether ``data`` is a sealed token (by its marker byte; see :data:`SEALED_MARKER`)."""
    return len(data) > 0 and data[0] == SEALED_MARKER


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class PeerCipher:
    """Seals and opens Raft messages with AES-256-GCM under a key derived from the cluster
    password (PBKDF2-HMAC-SHA256, :data:`KDF_ITERATIONS`, a salt of its own).

    Contract:

    - :meth:`seal` never reuses a nonce: each instance draws a random 8-byte prefix and counts
      4 bytes after it; when the counter wraps it draws a new prefix, never one it used before.
      Every controller holds the same key, so uniqueness across controllers rests on the
      prefixes being random (a collision is a 2^-64 event per pair of prefixes).
    - :meth:`open` returns the plaintext only if the token was sealed under the same password
      and not changed by one bit; anything else raises :class:`SealedMessageError`, as does a
      token shorter than the overhead or longer than ``max_token_bytes`` (the transport's
      message limit, checked before any decryption work).
    - The timestamp is the sealer's monotonic clock in milliseconds (pysyncobj stamps its Fernet
      tokens with its monotonic clock too): it is authenticated, and only its order on one
      connection means anything (the transport refuses one older than the previous token's).

    Thread-safe: the nonce counter is taken under a lock; AESGCM itself holds no state.
    """

    def __init__(self, password: str | bytes, *, max_token_bytes: int,
                 clock_ms: Callable[[], int] = _monotonic_ms,
                 random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        if max_token_bytes < TOKEN_OVERHEAD:
            raise ValueError(f"max_token_bytes must be at least {TOKEN_OVERHEAD}")
        secret = password.encode() if isinstance(password, str) else bytes(password)
        kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=_SALT,
                         iterations=KDF_ITERATIONS)
        self._aead = AESGCM(kdf.derive(secret))
        self.max_token_bytes = max_token_bytes
        self._clock_ms = clock_ms
        self._random = random_bytes
        self._lock = threading.Lock()
        self._used_prefixes: set[bytes] = set()
        self._prefix = self._new_prefix()
        self._counter = 0

    def seal(self, plaintext: bytes) -> bytes:
        """``plaintext`` as a token (:data:`TOKEN_OVERHEAD` bytes longer)."""
        header = _HEADER.pack(SEALED_MARKER, self._clock_ms())
        nonce = self._next_nonce()
        return header + nonce + self._aead.encrypt(nonce, plaintext, header)

    def open(self, token: bytes) -> bytes:
        """The plaintext of ``token``; :class:`SealedMessageError` if it is not a whole,
        unchanged token of this password."""
        return self.open_stamped(token)[1]

    def open_stamped(self, token: bytes) -> tuple[int, bytes]:
        """``(timestamp_ms, plaintext)`` of ``token``, checked as :meth:`open` does."""
        size = len(token)
        if size < TOKEN_OVERHEAD:
            raise SealedMessageError(f"a sealed message of {size} bytes is shorter than its "
                                     f"{TOKEN_OVERHEAD}-byte header and tag")
        if size > self.max_token_bytes:
            raise SealedMessageError(f"a sealed message of {size} bytes is larger than the "
                                     f"{self.max_token_bytes} accepted")
        marker, timestamp = _HEADER.unpack_from(token)
        if marker != SEALED_MARKER:
            raise SealedMessageError(f"not a sealed message (first byte {marker:#04x})")
        view = memoryview(token)
        nonce = bytes(view[_HEADER.size:_HEADER.size + _NONCE_BYTES])
        try:
            plaintext = self._aead.decrypt(nonce, view[_HEADER.size + _NONCE_BYTES:],
                                           view[:_HEADER.size])
        except InvalidTag:
            raise SealedMessageError(
                f"a sealed message of {size} bytes fails its tag: another password, or bytes "
                "changed on the way") from None
        return timestamp, plaintext

    def _next_nonce(self) -> bytes:
        with self._lock:
            if self._counter == _COUNTER_END:
                self._prefix = self._new_prefix()
                self._counter = 0
            counter = self._counter
            self._counter += 1
            return self._prefix + counter.to_bytes(4, "big")

    def _new_prefix(self) -> bytes:
        # A new prefix per 2^32 seals: the set stays tiny, and no prefix (so no nonce) repeats.
        while True:
            prefix = self._random(_PREFIX_BYTES)
            if len(prefix) == _PREFIX_BYTES and prefix not in self._used_prefixes:
                self._used_prefixes.add(prefix)
                return prefix
