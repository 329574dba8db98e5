"""Reading the files a command names (chunkraft.cli.input_files): hostile files are one-line
errors naming the file, never a traceback, for the helper and for every command that reads a
file."""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chunkraft.cli.errors import InputFileError, ToolError
from chunkraft.cli.input_files import (
    MAX_INPUT_FILE_BYTES,
    MAX_JSON_DEPTH,
    json_depth_exceeds,
    read_input_json,
    read_input_lines,
    read_input_text,
)
from chunkraft.cli.main import main
from chunkraft.controller.settings import SETTINGS

UNREACHABLE = "http://127.0.0.1:1"  # nothing listens: a command that got past its file fails

Write = Callable[[Path], None]


def _bytes(data: bytes) -> Write:
    return lambda path: path.write_bytes(data)


def _sparse(size: int) -> Write:
    def write(path: Path) -> None:
        with path.open("wb") as file:
            file.truncate(size)  # 50 MB in no time: the bound is checked before any read

    return write


def _directory(path: Path) -> None:
    path.mkdir()


def _missing(path: Path) -> None:
    pass


HOSTILE: dict[str, tuple[Write, str]] = {
    "nested arrays": (_bytes(b"[" * 100_000), f"nests arrays or objects more than "
                                              f"{MAX_JSON_DEPTH} deep"),
    "nested objects": (_bytes(b'{"a":' * 100_000), "nests arrays or objects more than"),
    "50 MB": (_sparse(50 * 1024 * 1024), f"is too large: 52428800 bytes, at most "
                                         f"{MAX_INPUT_FILE_BYTES} bytes (8 MiB)"),
    "invalid UTF-8": (_bytes(b'{"partitions": "\xff\xfe"}'),
                      "is not UTF-8 text (byte 0xff at byte 16, line 1)"),
    "binary": (_bytes(bytes(range(256)) * 16), "is binary, not text (a NUL byte at byte 0"),
    "UTF-8 BOM": (_bytes(b'\xef\xbb\xbf{"partitions": []}'),
                  "starts with a UTF-8 byte-order mark; save it as UTF-8 without one"),
    "UTF-16": (_bytes('{"partitions": []}'.encode("utf-16")),
               "starts with a UTF-16 byte-order mark"),
    "a directory": (_directory, "is a directory, not a file"),
    "missing": (_missing, "does not exist"),
}
"""Files no command may crash on: how to make each, and what the message says."""

JSON_ONLY: dict[str, tuple[Write, str]] = {
    "empty": (_bytes(b""), "is empty"),
    "blank": (_bytes(b" \n\t\n"), "is empty"),
    "not JSON": (_bytes(b"{not json"), "is not valid JSON: Expecting property name enclosed "
                                       "in double quotes (line 1, column 2)"),
    "NaN": (_bytes(b'{"partitions": NaN}'), "is not valid JSON: NaN is not a JSON value"),
    "huge integer": (_bytes(b"[" + b"9" * 5000 + b"]"), "is not valid JSON: Exceeds the limit"),
}
"""What only a JSON reader refuses (an empty properties file is a valid, empty config)."""


def _make(tmp_path: Path, case: str, table: dict[str, tuple[Write, str]]) -> tuple[Path, str]:
    write, message = table[case]
    path = tmp_path / "input.file"
    write(path)
    return path, message


# ------------------------------------------------------------------ the helper


@pytest.mark.parametrize("case", [*HOSTILE, *JSON_ONLY])
def test_read_input_json_refuses_each_hostile_file(tmp_path: Path, case: str) -> None:
    path, message = _make(tmp_path, case, {**HOSTILE, **JSON_ONLY})
    with pytest.raises(InputFileError) as refused:
        read_input_json(path, "test file")
    text = str(refused.value)
    assert message in text and "\n" not in text
    assert str(path) in text and "test file" in text
    assert isinstance(refused.value, ToolError)  # what the tools print as a failed command


@pytest.mark.parametrize("case", list(HOSTILE)[2:])  # the nesting cases are text
def test_read_input_text_refuses_what_is_not_bounded_utf8(tmp_path: Path, case: str) -> None:
    path, message = _make(tmp_path, case, HOSTILE)
    with pytest.raises(InputFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_input_text(path, "test file")


def test_what_is_within_the_bounds_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    nested = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)  # inside the top object
    path.write_text('{"a": "[[[[ { not brackets", "b": ' + nested + ', "c": "é"}')
    document = read_input_json(path, "test file")
    assert document["a"] == "[[[[ { not brackets" and document["c"] == "é"
    path.write_bytes(b" " * MAX_INPUT_FILE_BYTES)  # exactly the bound: read (and then empty)
    with pytest.raises(InputFileError, match="is empty"):
        read_input_json(path, "test file")


def test_a_stream_without_a_size_is_read_no_further_than_the_bound() -> None:
    with pytest.raises(InputFileError, match=r"/dev/zero is too large: more than 1024 bytes$"):
        read_input_text("/dev/zero", "test file", max_bytes=1024)


def test_an_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.json"
    path.write_text("{}")
    path.chmod(0)
    if os.geteuid() == 0:
        # Root reads a mode-000 file, so the refusal the kernel gives anyone else is given
        # here by Path.open itself, for this file only.
        real_open = Path.open

        def refusing_open(self: Path, *args: Any, **kwargs: Any) -> Any:
            if self == path:
                raise PermissionError(13, "Permission denied", str(self))
            return real_open(self, *args, **kwargs)

        monkeypatch.setattr(Path, "open", refusing_open)
    with pytest.raises(InputFileError, match=r"cannot read test file .*: Permission denied"):
        read_input_json(path, "test file")


@pytest.mark.parametrize(("text", "deeper"), [
    ("[]", False), ("[[]]", False), ('"[[[[[["', False), ('["\\"[[[["]', False),
    ('"unterminated [[[[[', False), ("[[[", True), ('[{"a": [1]}]', True),
])
def test_the_depth_scan_ignores_strings(text: str, deeper: bool) -> None:
    assert json_depth_exceeds(text, 2) is deeper


def test_the_depth_scan_is_linear_on_hostile_strings() -> None:
    # Backslash-quote pairs without an end: a backtracking string pattern would be quadratic.
    started = time.monotonic()
    assert not json_depth_exceeds('"' + '\\"' * (2 * 1024 * 1024), MAX_JSON_DEPTH)
    assert not json_depth_exceeds('"' * (4 * 1024 * 1024), MAX_JSON_DEPTH)
    assert time.monotonic() - started < 5


def test_lines_are_bounded_and_named() -> None:
    assert list(read_input_lines(io.BytesIO(b"a\nb\xc3\xa9\nc"))) == ["a\n", "b\u00e9\n", "c"]
    assert list(read_input_lines(io.BytesIO(b"a\0b\n"))) == ["a\0b\n"]  # a NUL is UTF-8
    with pytest.raises(InputFileError, match=r"^standard input line 2 is not UTF-8 text "
                                             r"\(byte 0xff at byte 1 of the line\)$"):
        list(read_input_lines(io.BytesIO(b"ok\nx\xff\n")))
    with pytest.raises(InputFileError, match=r"^standard input line 2 is longer than 4 bytes$"):
        list(read_input_lines(io.BytesIO(b"1234\n12345\n"), max_line_bytes=4))
    with pytest.raises(InputFileError, match="starts with a UTF-8 byte-order mark"):
        list(read_input_lines(io.BytesIO(b"\xef\xbb\xbfa\n")))


# ------------------------------------------------------------------ every command that reads


def _chunks(action: str) -> Callable[[Path], list[str]]:
    return lambda path: ["chunks", action, "--bootstrap-server", UNREACHABLE,
                         f"--{action}-chunk-json-file", str(path)]


def _command_config(*words: str) -> Callable[[Path], list[str]]:
    return lambda path: [*words, "--command-config", str(path)]


JSON_COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "chunks create": _chunks("create"),
    "chunks alter": _chunks("alter"),
    "credentials list": lambda path: ["credentials", "list", "--file", str(path)],
    "credentials add": lambda path: ["credentials", "add", "--file", str(path),
                                     "--principal", "User:alice"],
    "credentials revoke": lambda path: ["credentials", "revoke", "--file", str(path),
                                        "--principal", "User:alice"],
}
"""Commands that read a JSON file: every hostile file is refused (``missing`` aside, where
the credentials commands see an empty file, as documented)."""

PROPERTIES_COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "topics": _command_config("topics", "--bootstrap-server", UNREACHABLE, "--list"),
    "chunks describe": _command_config("chunks", "describe", "--bootstrap-server", UNREACHABLE),
    "acls": _command_config("acls", "--bootstrap-server", UNREACHABLE, "--list"),
    "quorum": _command_config("quorum", "describe", "--bootstrap-server", UNREACHABLE),
    "produce": _command_config("produce", "--bootstrap-server", UNREACHABLE, "--topic", "t"),
    "consume": _command_config("consume", "--bootstrap-server", UNREACHABLE, "--topic", "t"),
    "snapshot export": _command_config("snapshot", "export", "--bootstrap-server",
                                       UNREACHABLE, "--out", "/nonexistent/export"),
    "controller": lambda path: ["controller", "--config", str(path)],
    "broker": lambda path: ["broker", "--config", str(path)],
}
"""Commands that read a properties file (``--command-config``, ``--config``)."""

_NESTING = ("nested arrays", "nested objects")


@pytest.fixture(autouse=True)
def quiet_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CHUNKRAFT_* variable of the runner leaks in; standard input is empty bytes."""
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env_var, raising=False)
    monkeypatch.delenv("CHUNKRAFT_TOKEN", raising=False)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))


def _run_and_check(argv: list[str], path: Path, message: str,
                   capsys: pytest.CaptureFixture[str]) -> None:
    status = main(argv)
    captured = capsys.readouterr()
    assert status != 0, (argv, captured.err)
    assert "Traceback" not in captured.err
    assert captured.err.count("\n") == 1, captured.err  # one line
    assert str(path) in captured.err
    assert message in captured.err, captured.err


@pytest.mark.parametrize(("command", "case"), [
    (command, case) for command in JSON_COMMANDS for case in [*HOSTILE, *JSON_ONLY]
    # A missing credentials file is an empty one (add creates it), not a hostile file.
    if not (case == "missing" and command.startswith("credentials"))])
def test_every_json_reading_command_refuses_hostile_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, case: str) -> None:
    path, message = _make(tmp_path, case, {**HOSTILE, **JSON_ONLY})
    _run_and_check(JSON_COMMANDS[command](path), path, message, capsys)


@pytest.mark.parametrize("case", [case for case in HOSTILE if case not in _NESTING])
@pytest.mark.parametrize("command", list(PROPERTIES_COMMANDS))
def test_every_properties_reading_command_refuses_hostile_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, case: str) -> None:
    path, message = _make(tmp_path, case, HOSTILE)
    _run_and_check(PROPERTIES_COMMANDS[command](path), path, message, capsys)


@pytest.mark.parametrize("case", _NESTING)
@pytest.mark.parametrize("command", list(PROPERTIES_COMMANDS))
def test_brackets_in_a_properties_file_are_a_line_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, case: str) -> None:
    # Not JSON, so no nesting bound: the properties reader refuses the first line itself.
    path, _ = _make(tmp_path, case, HOSTILE)
    _run_and_check(PROPERTIES_COMMANDS[command](path), path, "", capsys)


# A missing state file is a new cluster, not a hostile file.
@pytest.mark.parametrize("case", [case for case in [*HOSTILE, *JSON_ONLY] if case != "missing"])
def test_a_hostile_cluster_state_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      case: str) -> None:
    state = tmp_path / "cluster" / "cluster.json"
    state.parent.mkdir()
    _, message = _make(tmp_path, case, {**HOSTILE, **JSON_ONLY})
    (tmp_path / "input.file").rename(state)
    _run_and_check(["cluster", "--dir", str(state.parent), "--exit"], state, message, capsys)
