"""``chunkraft chunks`` (chunkraft.cli.chunks): per-item result lines, the progress bar and the
wait for moves (over httpx's MockTransport), and usage mistakes."""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest

from chunkraft.cli.chunks import ProgressBar, format_result, wait_for_moves
from chunkraft.cli.main import main
from chunkraft.cli.output import ToolError
from chunkraft.client.admin import AdminClient

URL = "http://127.0.0.1:1"
CREATE_ITEM = {"topic": "topic1", "partition": 0, "replicas": [1, 2, 3]}
ALTER_ITEM = {"topic": "topic1", "partition": 0, "start_offset": 289818, "replicas": [4, 5, 6]}
OK = {"error_code": 0, "error_name": "NONE", "error_message": None}


def test_result_lines_say_what_was_done_or_the_kafka_error() -> None:
    assert format_result("create", CREATE_ITEM, OK) == \
        "Created a new active chunk of partition topic1-0 on brokers 1,2,3."
    assert format_result("create", CREATE_ITEM, OK, dry_run=True) == \
        "A new active chunk of partition topic1-0 on brokers 1,2,3 is valid (dry run: " \
        "nothing changed)."
    failed = {"error_code": 5, "error_name": "LEADER_NOT_AVAILABLE",
              "error_message": "broker 1 did not answer"}
    assert format_result("create", CREATE_ITEM, failed) == \
        "Error for partition topic1-0: LEADER_NOT_AVAILABLE: broker 1 did not answer"
    assert format_result("alter", ALTER_ITEM, OK) == \
        "Moving chunk topic1-0 at offset 289818 to brokers 4,5,6."
    unknown = {"error_code": 10001, "error_name": "UNKNOWN_CHUNK", "error_message": None}
    assert format_result("alter", ALTER_ITEM, unknown) == \
        "Error for chunk topic1-0 at offset 289818: UNKNOWN_CHUNK"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_redraws_on_a_terminal_and_prints_changes_elsewhere() -> None:
    bar = ProgressBar(4, Terminal())
    assert bar.render(1) == "Moving chunks [#######.......................] 1/4 complete"
    bar.update(1)
    bar.update(1)
    bar.finish()
    assert bar.stream.getvalue().count("\r") == 2 and bar.stream.getvalue().endswith("\n")
    log = io.StringIO()
    plain = ProgressBar(2, log)
    for done in (0, 0, 1, 2):
        plain.update(done)
    plain.finish()
    assert log.getvalue().splitlines() == [
        "Moving chunks [..............................] 0/2 complete",
        "Moving chunks [###############...............] 1/2 complete",
        "Moving chunks [##############################] 2/2 complete",
    ]


def chunk_server(polls_until_done: dict[int, int]) -> httpx.MockTransport:
    """Chunks at the given start offsets, each moving until it was polled that many times."""
    polls: dict[int, int] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v3/clusters":
            return httpx.Response(200, json={"data": [{"cluster_id": "c"}]})
        offset = int(request.url.path.rsplit("/", 1)[1])
        if offset not in polls_until_done:
            return httpx.Response(404, json={"error_code": 10001, "error_name": "UNKNOWN_CHUNK",
                                             "message": "gone"})
        polls[offset] = polls.get(offset, 0) + 1
        moving = polls[offset] < polls_until_done[offset]
        body: dict[str, Any] = {"adding_replica_ids": [4] if moving else [],
                                "removing_replica_ids": [1] if moving else []}
        return httpx.Response(200, json=body)

    return httpx.MockTransport(handler)


def test_wait_for_moves_polls_until_every_move_completes() -> None:
    moves = [{**ALTER_ITEM, "start_offset": offset} for offset in (0, 100, 200)]
    log = io.StringIO()
    with AdminClient(URL, transport=chunk_server({0: 1, 100: 3})) as client:
        wait_for_moves(client, moves, timeout=5, stream=log, poll=0.01)
    lines = log.getvalue().splitlines()
    assert lines[0].endswith("2/3 complete")  # 0 done, 200 gone (retention): done too
    assert lines[-1].endswith("3/3 complete")


def test_wait_for_moves_gives_up_after_the_timeout_naming_what_is_left() -> None:
    log = io.StringIO()
    with AdminClient(URL, transport=chunk_server({0: 10**9})) as client, \
            pytest.raises(ToolError, match="timed out after 100 ms waiting for 1 of 1 chunk "
                                           "moves: topic1-0 at offset 0"):
        wait_for_moves(client, [{**ALTER_ITEM, "start_offset": 0}], timeout=0.1, stream=log,
                       poll=0.02)


@pytest.mark.parametrize(("argv", "message"), [
    (["create"], "create needs --create-chunk-json-file"),
    (["alter"], "alter needs --alter-chunk-json-file"),
    (["create", "--create-chunk-json-file", "f", "--alter-chunk-json-file", "f"],
     "--alter-chunk-json-file can only be used with alter"),
    (["create", "--create-chunk-json-file", "f", "--wait"], "--wait can only be used with alter"),
    (["alter", "--alter-chunk-json-file", "f", "--wait", "--dry-run"],
     "--wait cannot be used with --dry-run"),
    (["describe", "--partition", "0"], "--partition needs --topic"),
    (["describe", "--dry-run"], "--dry-run can only be used with create or alter"),
    (["move"], "argument action: invalid choice: 'move'"),
])
def test_usage_mistakes_exit_1(capsys: pytest.CaptureFixture[str], argv: list[str],
                               message: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["chunks", *argv, "--bootstrap-server", URL])
    captured = capsys.readouterr()
    assert exited.value.code == 1
    assert captured.err.startswith("usage: chunkraft chunks ")
    assert message in captured.err


def test_a_missing_file_is_a_chunk_command_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunks", "create", "--bootstrap-server", URL,
                 "--create-chunk-json-file", "/nonexistent/c.json"]) == 1
    assert capsys.readouterr().err == ("Error while executing chunk command : create-chunk "
                                       "JSON file /nonexistent/c.json does not exist\n")
