"""Reading the files a command names, so that no file, however hostile, gives a traceback.

Every file a ``chunkraft`` command reads (a chunk JSON file, a ``--command-config``, a
``--config``, a credentials file, the local cluster's state) goes through here first. A file
is refused with one line naming it and the problem, raised as :class:`InputFileError` (a
:class:`~chunkraft.cli.errors.ToolError`, so the admin tools print ``Error while executing
<word> command : ...`` and exit 1) when it

- does not exist, cannot be opened (permissions) or is a directory;
- is larger than :data:`MAX_INPUT_FILE_BYTES` (checked before reading a regular file, and by
  reading at most one byte more than the bound from a pipe or device, so ``/dev/zero`` ends too);
- is not plain UTF-8 text: a NUL byte (binary), a byte-order mark (UTF-8's included: Python's
  JSON parser and the properties readers would take it as part of the first key), or bytes
  that are not UTF-8 (the message gives the byte's offset and line);
- for JSON: is not JSON, is nested deeper than :data:`MAX_JSON_DEPTH`, holds ``NaN`` /
  ``Infinity`` (not JSON, though Python's parser takes them) or a number too long to convert.

Why a depth bound before parsing: Python's JSON parser recurses once per ``[`` or ``{``, and
100,000 of them raise RecursionError. The bound is checked by a linear scan (strings removed by
one regular expression that cannot backtrack, then the brackets counted), well under a second
for a file of the maximum size; RecursionError is still caught, as a second line of defence.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from chunkraft.cli.errors import InputFileError
from chunkraft.client.command_config import CommandConfig

__all__ = [
    "MAX_INPUT_FILE_BYTES",
    "MAX_INPUT_LINE_BYTES",
    "MAX_JSON_DEPTH",
    "InputFileError",
    "check_input_file",
    "json_depth_exceeds",
    "load_command_config",
    "read_input_json",
    "read_input_lines",
    "read_input_text",
]

MAX_INPUT_FILE_BYTES = 8 * 1024 * 1024
"""The largest file a command reads: 8 MiB. A chunk file of the most items one request may
carry (1,000) is about 100 KB; a command or controller config is a few hundred bytes; a
credentials file of 8 MiB holds some 40,000 tokens."""

MAX_JSON_DEPTH = 64
"""How deeply a JSON input file may nest arrays and objects. The deepest file chunkraft reads
nests 4 levels (``{"partitions": [{"replicas": [...]}]}``)."""

MAX_INPUT_LINE_BYTES = 1024 * 1024
"""The longest line ``chunkraft produce`` reads from standard input: 1 MiB, the default of
Kafka's ``max.request.size`` (a record of one line cannot be larger than the line)."""

_BOMS = (  # longest first: UTF-32 LE's mark begins with UTF-16 LE's
    (b"\xef\xbb\xbf", "UTF-8"),
    (b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"),
)
# A string runs to its closing quote or, unterminated, to the end of the text: the pattern
# always matches where it starts, so it never backtracks (linear on any input).
_JSON_STRING = re.compile(r'"(?:[^"\\]+|\\.)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def read_input_text(path: str | Path, what: str, *,
                    max_bytes: int = MAX_INPUT_FILE_BYTES) -> str:
    """The text of the file at ``path`` (``what`` names it in messages: "create-chunk JSON
    file", "command config file", ...), decoded as UTF-8.

    InputFileError if the file is missing, unreadable, a directory, over ``max_bytes``, binary,
    starts with a byte-order mark or is not UTF-8."""
    data = _read_bounded(Path(path), what, max_bytes)
    _refuse_bom(data, f"{what} {path}")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputFileError(f"{what} {path} is binary, not text (a NUL byte at byte {nul}, "
                             f"line {_line_of(data, nul)})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputFileError(f"{what} {path} is not UTF-8 text (byte "
                             f"0x{data[error.start]:02x} at byte {error.start}, line "
                             f"{_line_of(data, error.start)})") from None


def read_input_json(path: str | Path, what: str, *, max_bytes: int = MAX_INPUT_FILE_BYTES,
                    max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The parsed JSON document of the file at ``path``: :func:`read_input_text`, then JSON
    with a nesting bound. InputFileError for anything that is not a JSON document within the
    bounds (an empty file included)."""
    text = read_input_text(path, what, max_bytes=max_bytes)
    if not text.strip():
        raise InputFileError(f"{what} {path} is empty")
    if json_depth_exceeds(text, max_depth):
        raise InputFileError(f"{what} {path} nests arrays or objects more than {max_depth} "
                             "deep")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise InputFileError(f"{what} {path} is not valid JSON: {error.msg} "
                             f"(line {error.lineno}, column {error.colno})") from None
    except RecursionError:  # unreachable after the depth scan, unless the stack is deep
        raise InputFileError(f"{what} {path} nests arrays or objects too deeply") from None
    except ValueError as error:  # _refuse_constant's, or an integer of over 4,300 digits
        raise InputFileError(f"{what} {path} is not valid JSON: {error}") from None


def check_input_file(path: str | Path, what: str, *,
                     max_bytes: int = MAX_INPUT_FILE_BYTES) -> None:
    """Refuses (InputFileError) a file that :func:`read_input_text` would refuse.

    For files that code outside the CLI reads afterwards (a ``--command-config``, a
    controller's ``--config``): that reader then meets only a bounded UTF-8 text file."""
    read_input_text(path, what, max_bytes=max_bytes)


def load_command_config(path: str | Path | None) -> CommandConfig:
    """``--command-config``: the file checked here first, then read by
    :meth:`CommandConfig.load` (which raises CommandConfigError for what it says); without a
    path, the environment's token."""
    if path is not None:
        check_input_file(path, "command config file")
    return CommandConfig.load(path)


def read_input_lines(stream: IO[bytes], what: str = "standard input", *,
                     max_line_bytes: int = MAX_INPUT_LINE_BYTES) -> Iterator[str]:
    """The lines of a byte stream (standard input), decoded as UTF-8, each with its newline.

    Reads one line at a time, never more than ``max_line_bytes`` + 1 bytes of it (so an input
    without newlines cannot fill the memory); InputFileError naming the line for one that is
    longer or is not UTF-8, and for a byte-order mark at the start. (A NUL byte is valid UTF-8
    and stays: a record value may hold one, as with Kafka's console producer.)"""
    number = 0
    while True:
        raw = stream.readline(max_line_bytes + 1)
        if not raw:
            return
        number += 1
        if number == 1:
            _refuse_bom(raw, what)
        content = raw[:-1] if raw.endswith(b"\n") else raw
        if len(content) > max_line_bytes:
            raise InputFileError(f"{what} line {number} is longer than "
                                 f"{_size_text(max_line_bytes)}")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputFileError(f"{what} line {number} is not UTF-8 text (byte "
                                 f"0x{raw[error.start]:02x} at byte {error.start} of the line)"
                                 ) from None


def json_depth_exceeds(text: str, max_depth: int) -> bool:
    """Whether the JSON ``text`` nests arrays and objects more than ``max_depth`` deep
    (brackets inside strings do not count). Linear in ``len(text)``; never recurses."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    depth = 0
    for bracket in brackets:
        if bracket in "[{":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def _read_bounded(path: Path, what: str, max_bytes: int) -> bytes:
    """At most ``max_bytes`` of the file; InputFileError past that or if it cannot be read."""
    try:
        with path.open("rb") as file:
            info = os.fstat(file.fileno())
            if stat.S_ISDIR(info.st_mode):  # open() succeeds on a directory on some systems
                raise InputFileError(f"{what} {path} is a directory, not a file")
            if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
                raise InputFileError(f"{what} {path} is too large: {info.st_size} bytes, at "
                                     f"most {_size_text(max_bytes)}")
            # A pipe or device has no size up front: one byte past the bound says it is over.
            data = file.read(max_bytes + 1)
    except FileNotFoundError:
        raise InputFileError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise InputFileError(f"{what} {path} is a directory, not a file") from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputFileError(f"cannot read {what} {path}: {reason}") from None
    if len(data) > max_bytes:
        raise InputFileError(f"{what} {path} is too large: more than "
                             f"{_size_text(max_bytes)}")
    return data


def _refuse_bom(data: bytes, subject: str) -> None:
    for mark, encoding in _BOMS:
        if data.startswith(mark):
            raise InputFileError(f"{subject} starts with a {encoding} byte-order mark; save it "
                                 "as UTF-8 without one")


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _size_text(size: int) -> str:
    mib = 1024 * 1024
    return f"{size} bytes ({size // mib} MiB)" if size % mib == 0 else f"{size} bytes"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
