"""The credentials file: bearer tokens, stored as SHA-256 digests, and the store that reads it.

The file (``auth.credentials.file``) is JSON::

    {"version": 1, "tokens": [{"principal": "User:alice", "sha256": "<hex>",
                               "created": "2026-01-01T00:00:00+00:00", "description": ""}]}

Only digests are stored: a token is ``crt_`` and 43 url-safe characters (256 random bits), so
one SHA-256 suffices (no salt, no slow hash: nobody can guess a 256-bit secret from its
digest), and checking a token costs one hash and one dict lookup. The lookup is by the digest
of the presented token, so the time it takes tells an attacker nothing about a stored token.

:class:`CredentialStore` re-reads the file when its modification time (or size, or inode)
changes, looked at no more than once a second, so tokens are added and revoked without a
restart. :func:`add_token` and :func:`revoke_tokens` rewrite the file atomically (a temporary
file renamed over it), so a node never reads half a file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "FORMAT_VERSION",
    "TOKEN_PREFIX",
    "CredentialEntry",
    "CredentialStore",
    "CredentialsFileError",
    "add_token",
    "generate_token",
    "now_text",
    "parse_credentials",
    "read_credentials",
    "revoke_tokens",
    "token_digest",
    "write_credentials",
]

_log = logging.getLogger(__name__)

FORMAT_VERSION = 1
TOKEN_PREFIX = "crt_"
RELOAD_INTERVAL = 1.0
"""Seconds between two looks at the file's modification time."""


class CredentialsFileError(ValueError):
    """The credentials file cannot be read, or is not the format above (the message says why)."""


def generate_token() -> str:
    """A new bearer token: ``crt_`` and 43 url-safe characters (32 random bytes)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def now_text() -> str:
    """The current time as the file's ``created`` field writes it (ISO 8601, UTC, seconds)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def token_digest(token: str) -> str:
    """The hex SHA-256 of ``token`` (UTF-8), as the credentials file stores it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class CredentialEntry:
    """One token of the file: whose it is and the digest of its text (never the text)."""

    principal: str
    sha256: str
    created: str
    description: str = ""


def _entry(raw: Any, where: str) -> CredentialEntry:
    if not isinstance(raw, dict):
        raise CredentialsFileError(f"{where}: not an object")
    principal, digest = raw.get("principal"), raw.get("sha256")
    if not isinstance(principal, str) or ":" not in principal or not principal.split(":", 1)[1]:
        raise CredentialsFileError(f"{where}: principal must be Type:name (User:alice)")
    if not (isinstance(digest, str) and len(digest) == 64
            and all(c in "0123456789abcdef" for c in digest)):
        raise CredentialsFileError(f"{where}: sha256 must be 64 lower-case hex digits")
    created = raw.get("created", "")
    description = raw.get("description", "")
    if not isinstance(created, str) or not isinstance(description, str):
        raise CredentialsFileError(f"{where}: created and description must be strings")
    return CredentialEntry(principal, digest, created, description)


def parse_credentials(text: str, source: str = "credentials") -> list[CredentialEntry]:
    """The entries of a credentials file's ``text``; CredentialsFileError if malformed."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise CredentialsFileError(f"{source}: not JSON ({error})") from None
    if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
        raise CredentialsFileError(f"{source}: expected an object with \"version\": "
                                   f"{FORMAT_VERSION}")
    tokens = document.get("tokens", [])
    if not isinstance(tokens, list):
        raise CredentialsFileError(f"{source}: \"tokens\" must be a list")
    return [_entry(raw, f"{source}: tokens[{index}]") for index, raw in enumerate(tokens)]


def read_credentials(path: Path) -> list[CredentialEntry]:
    """The entries of the file at ``path`` (none if it does not exist)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as error:
        raise CredentialsFileError(f"cannot read {path}: {error}") from error
    return parse_credentials(text, str(path))


def write_credentials(path: Path, entries: Iterable[CredentialEntry]) -> None:
    """Replaces the file at ``path`` with ``entries``, atomically (mode 0600, as mkstemp
    creates it: digests are no secret, but who holds which token is nobody else's business)."""
    path = Path(path)
    document = {"version": FORMAT_VERSION, "tokens": [asdict(entry) for entry in entries]}
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(document, file, indent=2)
            file.write("\n")
            file.flush()
            os.fsync(fd)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def add_token(path: Path, principal: str, description: str = "",
              token: str | None = None) -> str:
    """Adds a token for ``principal`` to the file (created if missing); returns its text,
    which is stored nowhere: the caller shows it once."""
    token = token or generate_token()
    entries = read_credentials(path)
    entry = CredentialEntry(principal, token_digest(token), now_text(), description)
    _check_entry(entry)
    write_credentials(path, [*entries, entry])
    return token


def _check_entry(entry: CredentialEntry) -> None:
    _entry(asdict(entry), "the new token")


def revoke_tokens(path: Path, *, principal: str | None = None,
                  sha256_prefix: str | None = None) -> list[CredentialEntry]:
    """Removes the tokens of ``principal`` and / or whose digest starts with ``sha256_prefix``
    (at least one must be given); returns the removed entries."""
    if principal is None and not sha256_prefix:
        raise ValueError("name a principal or a sha256 prefix to revoke")
    entries = read_credentials(path)

    def matches(entry: CredentialEntry) -> bool:
        return ((principal is None or entry.principal == principal)
                and (not sha256_prefix or entry.sha256.startswith(sha256_prefix.lower())))

    removed = [entry for entry in entries if matches(entry)]
    if removed:
        write_credentials(path, [entry for entry in entries if not matches(entry)])
    return removed


class CredentialStore:
    """The tokens of one credentials file, kept current; thread-safe.

    :meth:`principal_for` answers the principal of a token or None. The file is read at
    construction (CredentialsFileError if it is malformed, so a bad file stops a start) and
    again whenever its modification time, size or inode changed, looked at no more than once
    per ``interval`` seconds. A file that turns malformed later is reported in the log and the
    tokens read last stay in force (an operator's typo does not lock everyone out); a file
    that disappears holds no tokens.
    """

    def __init__(self, path: Path, *, interval: float = RELOAD_INTERVAL,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.path = Path(path)
        self.interval = interval
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._signature: tuple[int, int, int] | None = None
        self._by_digest: dict[str, str] = {}
        self._checked = monotonic()
        self._load(strict=True)

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (status.st_mtime_ns, status.st_size, status.st_ino)

    def _load(self, *, strict: bool) -> None:
        signature = self._stat()
        try:
            entries = read_credentials(self.path) if signature is not None else []
        except CredentialsFileError as error:
            if strict:
                raise
            _log.error("credentials file %s: %s; keeping the %d tokens read before",
                       self.path, error, len(self._by_digest))
            self._signature = signature
            return
        self._by_digest = {entry.sha256: entry.principal for entry in entries}
        self._signature = signature

    def refresh(self) -> None:
        """Re-reads the file now if it changed (the periodic check, without the wait)."""
        with self._lock:
            self._checked = self._monotonic()
            if self._stat() != self._signature:
                self._load(strict=False)

    def principal_for(self, token: str) -> str | None:
        """The principal of ``token``, or None if no stored digest matches it."""
        if self._monotonic() - self._checked >= self.interval:
            self.refresh()
        return self._by_digest.get(token_digest(token))

    def __len__(self) -> int:
        return len(self._by_digest)
