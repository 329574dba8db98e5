"""``chunkraft credentials add | list | revoke`` (chunkraft.cli.credentials)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkraft.cli.main import main
from chunkraft.security.credentials import (
    CredentialEntry,
    CredentialStore,
    read_credentials,
    token_digest,
    write_credentials,
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["credentials", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_add_prints_the_token_once_and_stores_its_digest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "credentials.json"
    status, out, err = run(capsys, "add", "--file", str(path), "--principal", "User:alice",
                           "--description", "laptop")
    assert status == 0
    token = out.strip()
    assert token.startswith("crt_") and len(token) == 47
    assert "shown only this once" in err
    assert token not in path.read_text()
    assert CredentialStore(path).principal_for(token) == "User:alice"
    [entry] = read_credentials(path)
    assert (entry.description, entry.sha256) == ("laptop", token_digest(token))


def test_list_as_a_table_and_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "credentials.json"
    run(capsys, "add", "--file", str(path), "--principal", "User:alice")
    run(capsys, "add", "--file", str(path), "--principal", "User:broker-1", "--description", "b")
    status, out, _ = run(capsys, "list", "--file", str(path))
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["PRINCIPAL", "SHA256", "CREATED", "DESCRIPTION"]
    assert [line.split()[0] for line in lines[1:]] == ["User:alice", "User:broker-1"]
    assert all(len(line.split()[1]) == 12 for line in lines[1:])
    status, out, _ = run(capsys, "list", "--file", str(path), "--output", "json")
    assert [e["principal"] for e in json.loads(out)] == ["User:alice", "User:broker-1"]


def test_revoke_by_principal_or_digest_prefix(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "credentials.json"
    tokens = []
    for _ in range(2):
        tokens.append(run(capsys, "add", "--file", str(path), "--principal", "User:alice")[1]
                      .strip())
    bob = run(capsys, "add", "--file", str(path), "--principal", "User:bob")[1].strip()
    prefix = token_digest(tokens[0])[:12]
    status, out, _ = run(capsys, "revoke", "--file", str(path), "--sha256", prefix)
    assert status == 0 and out.strip() == f"revoked User:alice {prefix}"
    status, out, _ = run(capsys, "revoke", "--file", str(path), "--principal", "User:alice")
    assert status == 0 and out.count("revoked") == 1
    store = CredentialStore(path)
    assert store.principal_for(bob) == "User:bob"
    assert all(store.principal_for(token) is None for token in tokens)


@pytest.mark.parametrize(("args", "message"), [
    (["add", "--principal", "alice"], "not a principal of the form Type:name"),
    (["revoke"], "give --principal or --sha256"),
    (["revoke", "--sha256", "xyz"], "is not 4 to 64 hex digits"),
    (["revoke", "--principal", "User:nobody"], "no token matched"),
])
def test_user_errors_say_what_is_wrong_and_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    path = tmp_path / "credentials.json"
    run(capsys, "add", "--file", str(path), "--principal", "User:alice")
    status, _, err = run(capsys, *args[:1], "--file", str(path), *args[1:])
    assert status == 1
    assert err.startswith("Error while executing credentials command : ")
    assert message in err


def test_a_malformed_file_is_reported_not_overwritten(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "credentials.json"
    path.write_text("{not json")
    for args in (["add", "--principal", "User:a"], ["list"], ["revoke", "--principal", "User:a"]):
        status, _, err = run(capsys, *args[:1], "--file", str(path), *args[1:])
        assert status == 1 and "is not valid JSON" in err
    assert path.read_text() == "{not json"


def test_an_ambiguous_digest_prefix_is_refused(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "credentials.json"
    write_credentials(path, [CredentialEntry("User:a", "abcd" + "1" * 60, "", ""),
                             CredentialEntry("User:b", "abcd" + "0" * 60, "", "")])
    status, _, err = run(capsys, "revoke", "--file", str(path), "--sha256", "abcd")
    assert status == 1 and "matches 2 tokens; give more digits" in err
    assert len(read_credentials(path)) == 2
    status, _, err = run(capsys, "revoke", "--file", str(path), "--sha256", "abcd0")
    assert status == 0
    assert [e.principal for e in read_credentials(path)] == ["User:a"]
