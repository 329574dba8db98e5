"""An optional keyed signature of ``manifest.json``: HMAC-SHA256 with a key the operator gives.

The per-file SHA-256 sums in the manifest catch files damaged or replaced after the export, but
whoever can rewrite a file can rewrite the manifest's sums too. With a secret key shared by the
exporter and the auditor, the manifest carries ``"signature": {"algorithm": "hmac-sha256",
"value": HEX}`` over its canonical JSON (every other field, keys sorted, no spaces), so a
manifest changed without the key no longer verifies. The key is a file's bytes (a trailing
newline is not part of it); it never goes into the export.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from pathlib import Path

from chunkraft.export.manifest import ExportError, Manifest

__all__ = ["ALGORITHM", "SignatureError", "canonical_bytes", "check_signature", "read_key",
           "sign"]

ALGORITHM = "hmac-sha256"
MIN_KEY_BYTES = 16


class SignatureError(ExportError):
    """A manifest is unsigned, signed otherwise, or its signature does not match the key."""


def read_key(path: str | Path) -> bytes:
    """The key in file ``path`` (trailing newlines stripped); ExportError if it cannot be read
    or is shorter than 16 bytes."""
    try:
        key = Path(path).read_bytes().rstrip(b"\r\n")
    except OSError as error:
        raise ExportError(f"cannot read the signing key {path}: {error.strerror}") from error
    if len(key) < MIN_KEY_BYTES:
        raise ExportError(f"the signing key {path} is {len(key)} bytes; at least "
                          f"{MIN_KEY_BYTES} are needed")
    return key


def canonical_bytes(manifest: Manifest) -> bytes:
    """What the signature covers: the manifest without its signature, as canonical JSON."""
    return json.dumps(manifest.unsigned_json(), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode("ascii")


def _mac(manifest: Manifest, key: bytes) -> str:
    return hmac.new(key, canonical_bytes(manifest), hashlib.sha256).hexdigest()


def sign(manifest: Manifest, key: bytes) -> Manifest:
    """``manifest`` with its signature under ``key``."""
    return dataclasses.replace(manifest, signature={"algorithm": ALGORITHM,
                                                    "value": _mac(manifest, key)})


def check_signature(manifest: Manifest, key: bytes, where: str) -> None:
    """Raises SignatureError unless ``manifest`` is signed with ``key``."""
    if manifest.signature is None:
        raise SignatureError(f"{where}: the manifest is not signed, and a key was given")
    algorithm = manifest.signature.get("algorithm")
    if algorithm != ALGORITHM:
        raise SignatureError(f"{where}: the manifest is signed with {algorithm!r}, not "
                             f"{ALGORITHM}")
    if not hmac.compare_digest(manifest.signature.get("value", ""), _mac(manifest, key)):
        raise SignatureError(f"{where}: the manifest's signature does not match the key "
                             "(the manifest was changed, or signed with another key)")
