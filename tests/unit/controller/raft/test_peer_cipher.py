"""peer_cipher: AES-256-GCM tokens, their nonces, and telling them from Fernet tokens."""

from __future__ import annotations

import itertools
import os
import struct

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from pysyncobj.encryptor import SALT as FERNET_SALT
from pysyncobj.encryptor import getEncryptor

from chunkraft.controller.raft.peer_cipher import (
    SEALED_MARKER,
    TOKEN_OVERHEAD,
    PeerCipher,
    is_sealed,
)
from chunkraft.errors import SealedMessageError

PASSWORD = "cipher-test"
LIMIT = 1 << 20


@pytest.fixture(scope="module")
def cipher() -> PeerCipher:
    # Module-scoped: each PeerCipher derives its key with 100,000 PBKDF2 rounds.
    return PeerCipher(PASSWORD, max_token_bytes=LIMIT)


def nonce_of(token: bytes) -> bytes:
    return token[9:21]


def test_a_token_round_trips_with_its_header(cipher: PeerCipher) -> None:
    for plaintext in (b"", b"x", os.urandom(5000)):
        token = cipher.seal(plaintext)
        assert len(token) == len(plaintext) + TOKEN_OVERHEAD
        assert token[0] == SEALED_MARKER and is_sealed(token)
        assert cipher.open(token) == plaintext
    stamped = PeerCipher(PASSWORD, max_token_bytes=LIMIT, clock_ms=lambda: 1_763_700_000_123)
    token = stamped.seal(b"stamped")
    assert struct.unpack_from(">Q", token, 1)[0] == 1_763_700_000_123
    assert cipher.open_stamped(token) == (1_763_700_000_123, b"stamped")


def test_another_instance_with_the_same_password_opens_it(cipher: PeerCipher) -> None:
    other = PeerCipher(PASSWORD.encode(), max_token_bytes=LIMIT)
    assert other.open(cipher.seal(b"between peers")) == b"between peers"


@pytest.mark.parametrize("where", ["marker", "timestamp", "nonce", "ciphertext", "tag"])
def test_any_changed_byte_fails_the_tag(cipher: PeerCipher, where: str) -> None:
    token = bytearray(cipher.seal(b"a Raft message of some length"))
    index = {"marker": 0, "timestamp": 3, "nonce": 12, "ciphertext": 25, "tag": -1}[where]
    token[index] ^= 0x01
    with pytest.raises(SealedMessageError):
        cipher.open(bytes(token))


def test_short_long_and_foreign_tokens_are_refused(cipher: PeerCipher) -> None:
    with pytest.raises(SealedMessageError, match="shorter"):
        cipher.open(cipher.seal(b"abc")[:TOKEN_OVERHEAD - 1])
    with pytest.raises(SealedMessageError, match="larger"):
        cipher.open(cipher.seal(bytes(LIMIT)))
    with pytest.raises(SealedMessageError, match="not a sealed message"):
        cipher.open(b"g" + bytes(TOKEN_OVERHEAD))
    with pytest.raises(ValueError):
        PeerCipher(PASSWORD, max_token_bytes=TOKEN_OVERHEAD - 1)


def test_a_wrong_password_fails(cipher: PeerCipher) -> None:
    other = PeerCipher("not-" + PASSWORD, max_token_bytes=LIMIT)
    with pytest.raises(SealedMessageError, match="tag"):
        other.open(cipher.seal(b"secret"))


def test_nonces_are_distinct_across_many_seals_and_instances(cipher: PeerCipher) -> None:
    other = PeerCipher(PASSWORD, max_token_bytes=LIMIT)
    nonces = [nonce_of(c.seal(b"m")) for _ in range(20_000) for c in (cipher, other)]
    assert len(set(nonces)) == len(nonces)
    # One prefix per instance, a counter after it.
    assert {n[:8] for n in nonces[0::2]} == {nonce_of(cipher.seal(b""))[:8]}
    assert {n[:8] for n in nonces[0::2]} != {n[:8] for n in nonces[1::2]}


def test_a_wrapping_counter_draws_a_new_prefix_never_one_used_before() -> None:
    # A fake random source that repeats its first prefix once, as an unlucky draw would.
    draws = itertools.chain([b"A" * 8, b"A" * 8, b"B" * 8], (os.urandom(8) for _ in range(9)))
    cipher = PeerCipher(PASSWORD, max_token_bytes=LIMIT, random_bytes=lambda n: next(draws))
    first = nonce_of(cipher.seal(b"m"))
    assert first == b"A" * 8 + (0).to_bytes(4, "big")
    cipher._counter = (1 << 32) - 1  # 2^32 - 1 seals later
    last = nonce_of(cipher.seal(b"m"))
    assert last == b"A" * 8 + b"\xff\xff\xff\xff"
    wrapped = nonce_of(cipher.seal(b"m"))
    assert wrapped == b"B" * 8 + (0).to_bytes(4, "big")  # not the repeated A prefix
    assert cipher.open(cipher.seal(b"after the wrap")) == b"after the wrap"


def test_a_fernet_token_is_never_taken_for_a_sealed_one(cipher: PeerCipher) -> None:
    fernet = getEncryptor(PASSWORD)
    for size in (0, 1, 100, 10_000):
        token = fernet.encrypt(os.urandom(size))
        assert token[:1] == b"g"
        assert not is_sealed(token)
    assert not is_sealed(b"")
    with pytest.raises(SealedMessageError):
        cipher.open(bytes([SEALED_MARKER]) + fernet.encrypt(b"x" * 40))


def test_the_key_is_not_pysyncobjs_fernet_key(cipher: PeerCipher) -> None:
    # The same password and KDF with pysyncobj's salt: that key must not open our tokens.
    fernet_key = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=FERNET_SALT,
                            iterations=100_000).derive(PASSWORD.encode())
    token = cipher.seal(b"which key?")
    with pytest.raises(InvalidTag):
        AESGCM(fernet_key).decrypt(nonce_of(token), token[21:], token[:9])
