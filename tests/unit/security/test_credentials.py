"""The credentials file and CredentialStore (chunkraft.security.credentials)."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from chunkraft.security.credentials import (
    CredentialEntry,
    CredentialsFileError,
    CredentialStore,
    add_token,
    generate_token,
    parse_credentials,
    read_credentials,
    revoke_tokens,
    token_digest,
    write_credentials,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_token_has_256_random_bits_behind_a_prefix() -> None:
    tokens = {generate_token() for _ in range(100)}
    assert len(tokens) == 100
    assert all(re.fullmatch(r"crt_[A-Za-z0-9_-]{43}", token) for token in tokens)


def test_the_digest_is_the_hex_sha256_of_the_token() -> None:
    assert token_digest("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")


def test_add_creates_the_file_and_stores_only_the_digest(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    token = add_token(path, "User:alice", "laptop")
    text = path.read_text()
    assert token not in text
    document = json.loads(text)
    assert document["version"] == 1
    [entry] = document["tokens"]
    assert entry["principal"] == "User:alice"
    assert entry["sha256"] == token_digest(token)
    assert entry["description"] == "laptop"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", entry["created"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    second = add_token(path, "User:bob")
    assert [e.principal for e in read_credentials(path)] == ["User:alice", "User:bob"]
    assert second != token


def test_revoke_by_principal_or_digest_prefix(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    first = add_token(path, "User:alice")
    add_token(path, "User:alice")
    bob = add_token(path, "User:bob")
    removed = revoke_tokens(path, sha256_prefix=token_digest(first)[:12].upper())
    assert [e.sha256 for e in removed] == [token_digest(first)]
    assert [e.principal for e in revoke_tokens(path, principal="User:alice")] == ["User:alice"]
    assert [e.sha256 for e in read_credentials(path)] == [token_digest(bob)]
    assert revoke_tokens(path, principal="User:nobody") == []
    with pytest.raises(ValueError, match="name a principal"):
        revoke_tokens(path)


@pytest.mark.parametrize(("text", "problem"), [
    ("{", "not JSON"),
    ('{"version": 2, "tokens": []}', '"version": 1'),
    ('{"version": 1, "tokens": {}}', "must be a list"),
    ('{"version": 1, "tokens": [3]}', "tokens[0]: not an object"),
    ('{"version": 1, "tokens": [{"principal": "alice", "sha256": "' + "a" * 64 + '"}]}',
     "Type:name"),
    ('{"version": 1, "tokens": [{"principal": "User:a", "sha256": "ABC"}]}', "64 lower-case"),
])
def test_a_malformed_file_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(CredentialsFileError, match=re.escape(problem)):
        parse_credentials(text, "f.json")


def test_a_missing_file_holds_no_tokens(tmp_path: Path) -> None:
    assert read_credentials(tmp_path / "none.json") == []
    assert len(CredentialStore(tmp_path / "none.json")) == 0


def test_the_store_maps_tokens_to_principals(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    alice = add_token(path, "User:alice")
    store = CredentialStore(path)
    assert store.principal_for(alice) == "User:alice"
    assert store.principal_for(alice + "x") is None
    assert store.principal_for("") is None


def test_the_store_rereads_a_changed_file_at_most_once_per_interval(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    alice = add_token(path, "User:alice")
    clock = Clock()
    store = CredentialStore(path, monotonic=clock)
    bob = add_token(path, "User:bob")
    revoke_tokens(path, principal="User:alice")
    clock.now += 0.5
    assert store.principal_for(bob) is None  # not looked at yet
    assert store.principal_for(alice) == "User:alice"
    clock.now += 0.5
    assert store.principal_for(bob) == "User:bob"
    assert store.principal_for(alice) is None


def test_a_file_turned_malformed_keeps_the_tokens_read_before(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture
                                                                ) -> None:
    path = tmp_path / "credentials.json"
    alice = add_token(path, "User:alice")
    clock = Clock()
    store = CredentialStore(path, monotonic=clock)
    path.write_text("{ oops")
    clock.now += 1
    assert store.principal_for(alice) == "User:alice"
    assert "keeping the 1 tokens" in caplog.text
    write_credentials(path, [CredentialEntry("User:carol", token_digest("t"), "", "")])
    clock.now += 1
    assert store.principal_for("t") == "User:carol"
    assert store.principal_for(alice) is None


def test_a_malformed_file_at_start_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    path.write_text("[]")
    with pytest.raises(CredentialsFileError):
        CredentialStore(path)
