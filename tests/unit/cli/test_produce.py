"""``chunkraft produce``: flags, line parsing, and what it asks of the Producer (a fake)."""

from __future__ import annotations

import io
import sys
from concurrent.futures import Future
from typing import Any, ClassVar

import pytest

from chunkraft.cli.main import main
from chunkraft.cli.output import ToolError, run_tool
from chunkraft.cli.produce import LineReader, build_parser, parse_acks, run

URL = "http://127.0.0.1:9092"


class FakeProducer:
    """Records every call; ``fail_at`` makes that send's future fail."""

    made: ClassVar[list[FakeProducer]] = []

    def __init__(self, bootstrap: list[str], **options: Any) -> None:
        self.bootstrap = bootstrap
        self.options = options
        self.calls: list[Any] = []
        self.fail_at: int | None = FakeProducer.fail_next
        FakeProducer.made.append(self)

    fail_next: ClassVar[int | None] = None

    def send(self, topic: str, value: bytes | None, key: bytes | None = None) -> Future[int]:
        self.calls.append(("send", topic, key, value))
        future: Future[int] = Future()
        sends = sum(1 for c in self.calls if c[0] == "send")
        if self.fail_at == sends:
            future.set_exception(TimeoutError("delivery timed out"))
        else:
            future.set_result(sends - 1)
        return future

    def __getattr__(self, name: str) -> Any:
        if name in ("flush", "close", "init_transactions", "begin_transaction",
                    "commit_transaction", "abort_transaction"):
            return lambda: self.calls.append((name,))
        raise AttributeError(name)


def produce(words: list[str], text: str) -> tuple[int, FakeProducer]:
    FakeProducer.made.clear()
    parser = build_parser()
    args = parser.parse_args(["--bootstrap-server", URL, "--topic", "t", *words])
    status = run(parser, args, io.StringIO(text), FakeProducer)
    return status, FakeProducer.made[-1]


def test_lines_become_values_without_keys() -> None:
    status, producer = produce([], "a\nb\n")
    assert status == 0
    assert producer.calls == [("send", "t", None, b"a"), ("send", "t", None, b"b"), ("flush",),
                              ("close",)]
    assert producer.bootstrap == [URL]
    assert producer.options["acks"] == -1 and producer.options["transactional_id"] is None


def test_parse_key_splits_at_the_separator() -> None:
    status, producer = produce(["--property", "parse.key=true", "key.separator=:"],
                               "k1:v1\nk2:v:2\n")
    assert status == 0
    sends = [c for c in producer.calls if c[0] == "send"]
    assert sends == [("send", "t", b"k1", b"v1"), ("send", "t", b"k2", b"v:2")]


def test_a_line_without_the_separator_is_refused_unless_ignore_error() -> None:
    reader = LineReader(parse_key=True, key_separator=":")
    with pytest.raises(ToolError, match="line number 2"):
        list(reader.records(["a:1\n", "b\n"]))
    lenient = LineReader(parse_key=True, key_separator=":", ignore_error=True)
    assert list(lenient.records(["b\n"])) == [(None, b"b")]


def test_null_marker_and_tab_default() -> None:
    reader = LineReader.from_properties({"parse.key": "true", "null.marker": "NULL"})
    assert reader.parse("NULL\tv\n", 1) == (None, b"v")
    assert reader.parse("k\tNULL\n", 1) == (b"k", None)


def test_a_transaction_wraps_the_whole_input() -> None:
    status, producer = produce(["--transactional-id", "tx-1"], "a\n")
    assert status == 0
    assert [c[0] for c in producer.calls] == ["init_transactions", "begin_transaction", "send",
                                              "flush", "commit_transaction", "close"]
    assert producer.options["transactional_id"] == "tx-1"


def test_a_failed_record_aborts_the_transaction_and_names_the_record() -> None:
    FakeProducer.fail_next = 2
    try:
        with pytest.raises(ToolError, match="record 2 was not acknowledged: delivery timed"):
            produce(["--transactional-id", "tx-1"], "a\nb\nc\n")
    finally:
        FakeProducer.fail_next = None
    names = [c[0] for c in FakeProducer.made[-1].calls]
    assert "abort_transaction" in names and "commit_transaction" not in names
    assert names[-1] == "close"


def test_sync_waits_for_each_record() -> None:
    FakeProducer.fail_next = 1
    try:
        with pytest.raises(ToolError, match="record 1"):
            produce(["--sync"], "a\nb\n")
    finally:
        FakeProducer.fail_next = None
    assert [c[0] for c in FakeProducer.made[-1].calls] == ["send", "close"]  # b never sent


def test_producer_properties_become_keyword_arguments() -> None:
    _, producer = produce(["--producer-property", "linger.ms=20", "enable.idempotence=false",
                           "--producer-property", "client.id=me", "--acks", "1"], "")
    assert producer.options["linger_ms"] == 20
    assert producer.options["enable_idempotence"] is False
    assert producer.options["client_id"] == "me" and producer.options["acks"] == 1


def test_acks_values() -> None:
    assert [parse_acks(v) for v in ("all", "-1", "0", "1")] == [-1, -1, 0, 1]


@pytest.mark.parametrize(("words", "message"), [
    (["--property", "parse.kye=true"], "unknown key 'parse.kye'"),
    (["--producer-property", "linger.ms=soon"], "expected an integer"),
    (["--transactional-id", "x", "--acks", "1"], "needs --acks all"),
])
def test_mistakes_are_kafka_style_errors(words: list[str], message: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["produce", "--bootstrap-server", URL, "--topic", "t", *words])
    assert status == 1
    err = capsys.readouterr().err
    assert err.startswith("Error while executing produce command : ") and message in err


def test_usage_mistakes_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["produce", "--topic", "t"])
    assert exited.value.code == 1
    assert "--bootstrap-server" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["produce", "--bootstrap-server", URL, "--topic", "t", "--acks", "2"])
    assert exited.value.code == 1


def test_a_bad_bootstrap_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["produce", "--bootstrap-server", "127.0.0.1:9092", "--topic", "t"]) == 1
    assert "is not an http:// or https:// URL" in capsys.readouterr().err


@pytest.mark.parametrize(("data", "message"), [
    (b"fine\nbad \xff line\n", "standard input line 2 is not UTF-8 text (byte 0xff at byte 4 "
                                "of the line)"),
    (b"fine\n" + b"x" * (1024 * 1024 + 1), "standard input line 2 is longer than 1048576 "
                                          "bytes (1 MiB)"),
    (b"\xef\xbb\xbffine\n", "standard input starts with a UTF-8 byte-order mark; save it as "
                           "UTF-8 without one"),
])
def test_standard_input_that_is_not_bounded_utf8_is_one_error_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: bytes,
        message: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    FakeProducer.made.clear()
    parser = build_parser()
    args = parser.parse_args(["--bootstrap-server", URL, "--topic", "t"])
    status = run_tool("produce", lambda p, a: run(p, a, None, FakeProducer), parser, args)
    assert status == 1
    assert capsys.readouterr().err == f"Error while executing produce command : {message}\n"
    sent = [call for call in FakeProducer.made[-1].calls if call[0] == "send"]
    assert len(sent) == (0 if "byte-order" in message else 1)  # the lines before it went out
