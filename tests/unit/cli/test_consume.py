"""``chunkraft consume``: flags, the record format, stop conditions, and what it asks of the
Consumer (a fake)."""

from __future__ import annotations

import argparse
import io
from dataclasses import dataclass, field
from typing import Any

import pytest

from chunkraft.cli.consume import (
    RecordFormatter,
    build_parser,
    parse_key_range,
    parse_offset,
    parse_timestamp,
    run,
)
from chunkraft.cli.main import main

URL = "http://127.0.0.1:9092"


@dataclass
class Record:
    offset: int
    value: bytes | None
    key: bytes | None = None
    topic: str = "t"
    partition: int = 0
    timestamp: int = 1000
    headers: tuple[tuple[str, bytes | None], ...] = ()
    broker_id: int = 1


@dataclass
class FakeConsumer:
    bootstrap: list[str]
    options: dict[str, Any]
    batches: list[list[Record]]
    calls: list[Any] = field(default_factory=list)

    def poll(self, timeout_ms: int) -> list[Record]:
        self.calls.append(("poll",))
        return self.batches.pop(0) if self.batches else []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "partitions_for":
            return lambda topic: {0, 1}
        return lambda *args: self.calls.append((name, *args))


def consume(words: list[str], batches: list[list[Record]]) -> tuple[str, FakeConsumer]:
    made: list[FakeConsumer] = []

    def factory(bootstrap: list[str], **options: Any) -> FakeConsumer:
        made.append(FakeConsumer(bootstrap, options, list(batches)))
        return made[-1]

    parser = build_parser()
    args = parser.parse_args(["--bootstrap-server", URL, "--topic", "t", *words])
    out = io.StringIO()
    assert run(parser, args, out, factory) == 0
    return out.getvalue(), made[0]


def test_values_one_per_line_until_max_messages(capsys: pytest.CaptureFixture[str]) -> None:
    text, consumer = consume(["--max-messages", "3"],
                             [[Record(0, b"a"), Record(1, b"b")], [Record(2, b"c"),
                                                                  Record(3, b"d")]])
    assert text == "a\nb\nc\n"
    assert "Processed a total of 3 messages" in capsys.readouterr().err
    assert consumer.calls[0] == ("assign", [("t", 0), ("t", 1)])  # every partition
    assert consumer.calls[-1] == ("close",)
    assert consumer.options["auto_offset_reset"] == "latest"
    assert consumer.options["group_id"] is None


def test_timeout_ends_an_idle_consumer(capsys: pytest.CaptureFixture[str]) -> None:
    text, _ = consume(["--timeout-ms", "50", "--from-beginning"], [[Record(0, b"x")]])
    assert text == "x\n"
    assert "Processed a total of 1 messages" in capsys.readouterr().err


def test_a_group_subscribes_and_commits_each_batch() -> None:
    _, consumer = consume(["--group", "g", "--max-messages", "1",
                           "--isolation-level", "read_committed"], [[Record(0, b"x")]])
    assert consumer.calls[0] == ("subscribe", ["t"])
    assert ("commit",) in consumer.calls
    assert consumer.options["group_id"] == "g"
    assert consumer.options["isolation_level"] == "read_committed"


def test_partition_offset_and_key_ranges() -> None:
    _, consumer = consume(["--partition", "1", "--offset", "5", "--key-range", "0-99",
                           "--key-range", "200-300", "--timeout-ms", "0"], [])
    assert consumer.calls[:2] == [("assign", {("t", 1): [(0, 99), (200, 300)]}),
                                  ("seek", ("t", 1), 5)]
    _, consumer = consume(["--partition", "0", "--offset", "earliest", "--timeout-ms", "0"],
                          [])
    assert consumer.calls[:2] == [("assign", [("t", 0)]), ("seek_to_beginning", [("t", 0)])]


def test_the_formatter_prints_the_chosen_fields() -> None:
    formatter = RecordFormatter.from_properties({
        "print.key": "true", "print.offset": "true", "print.broker": "true",
        "print.partition": "true", "print.timestamp": "true", "key.separator": ":"})
    record = Record(7, b"v", key=b"k", partition=2, timestamp=99, broker_id=1)
    assert formatter.format(record) == "CreateTime:99:Partition:2:Offset:7:Broker:1:k:v\n"
    assert RecordFormatter(print_key=True).format(Record(0, None)) == "null\tnull\n"
    headers = RecordFormatter(print_headers=True, print_value=False)
    assert headers.format(Record(0, b"v", headers=(("h", b"1"), ("i", None)))) \
        == "h:1,i:null\n"
    assert headers.format(Record(0, b"v")) == "NO_HEADERS\n"


def test_parsers() -> None:
    assert parse_offset("earliest") == "earliest" and parse_offset("12") == 12
    assert parse_key_range("0-2147483647") == (0, 2**31 - 1)
    for bad in ("5-1", "a-b", "7", "0-2147483648"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_key_range(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_offset("-1")


@pytest.mark.parametrize(("words", "message"), [
    (["--offset", "3"], "The partition is required when offset is specified."),
    (["--key-range", "0-5"], "--key-range needs --partition"),
    (["--partition", "0", "--offset", "1", "--from-beginning"], "cannot be specified"),
    (["--partition", "0", "--key-range", "0-10", "--key-range", "5-20"], "overlap"),
    (["--from-timestamp", "5", "--from-beginning"], "--from-timestamp cannot be used with"),
    (["--partition", "0", "--offset", "1", "--from-timestamp", "5"],
     "--from-timestamp cannot be used with"),
    (["--group", "g", "--from-timestamp", "5"], "--from-timestamp with --group needs"),
    (["--from-timestamp", "yesterday"], "expected epoch milliseconds or an ISO-8601 time"),
])
def test_usage_mistakes_exit_1(words: list[str], message: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["consume", "--bootstrap-server", URL, "--topic", "t", *words])
    assert exited.value.code == 1
    assert message in capsys.readouterr().err


def test_an_unknown_property_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consume", "--bootstrap-server", URL, "--topic", "t",
                 "--property", "print.kye=true"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error while executing consume command : --property")


def test_max_messages_commits_only_what_was_printed() -> None:
    _, consumer = consume(["--group", "g", "--max-messages", "1"],
                          [[Record(4, b"x"), Record(5, b"y")]])
    assert ("commit", {("t", 0): 5}) in consumer.calls
    _, consumer = consume(["--group", "g", "--partition", "0", "--offset", "latest",
                           "--timeout-ms", "0"], [])
    assert consumer.calls[:2] == [("assign", [("t", 0)]), ("seek_to_end", [("t", 0)])]


def test_an_unknown_topic_is_an_error_without_a_total(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    def factory(bootstrap: list[str], **options: Any) -> FakeConsumer:
        consumer = FakeConsumer(bootstrap, options, [])
        consumer.partitions_for = lambda topic: []  # type: ignore[method-assign]
        return consumer

    parser = build_parser()
    args = parser.parse_args(["--bootstrap-server", URL, "--topic", "nope"])
    from chunkraft.cli.output import run_tool

    assert run_tool("consume", lambda p, a: run(p, a, io.StringIO(), factory), parser,
                    args) == 1
    assert capsys.readouterr().err == ("Error while executing consume command : "
                                       "UNKNOWN_TOPIC_OR_PARTITION: Topic 'nope' does not "
                                       "exist or has no partitions\n")


def test_timestamps_are_epoch_milliseconds_or_iso_8601() -> None:
    assert parse_timestamp("1795845600000") == 1795845600000
    assert parse_timestamp("2026-11-28T06:00:00Z") == 1795845600000
    assert parse_timestamp("2026-11-28T06:00:00") == 1795845600000  # UTC without a zone
    assert parse_timestamp("2026-11-28 07:00:00.250+01:00") == 1795845600250
    for bad in ("", "-5", "1969-12-31T00:00:00Z", "28/11/2026"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_timestamp(bad)


def test_from_timestamp_seeks_each_partition_read() -> None:
    _, consumer = consume(["--from-timestamp", "2026-11-28T06:00:00Z", "--timeout-ms", "0"],
                          [])
    assert consumer.calls[:3] == [("assign", [("t", 0), ("t", 1)]),
                                  ("seek_to_timestamp", ("t", 0), 1795845600000),
                                  ("seek_to_timestamp", ("t", 1), 1795845600000)]
    _, consumer = consume(["--partition", "1", "--group", "g", "--from-timestamp", "42",
                           "--max-messages", "1", "--timeout-ms", "0"], [])
    assert consumer.calls[:2] == [("assign", [("t", 1)]), ("seek_to_timestamp", ("t", 1), 42)]
    assert consumer.options["group_id"] == "g"
