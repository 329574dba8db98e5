"""The CLI's exceptions (chunkraft.cli.errors): what a refusal made on the client side reads."""

from __future__ import annotations

import argparse

import pytest

from chunkraft.cli.errors import InputFileError, KafkaRefusal, ToolError
from chunkraft.cli.output import ToolParser, run_tool
from chunkraft.client.admin import AdminError


def test_a_client_side_refusal_reads_as_a_controllers() -> None:
    refusal = KafkaRefusal("INVALID_REPLICA_ASSIGNMENT", "partition 1 lists a broker twice")
    server = AdminError(400, "INVALID_REPLICA_ASSIGNMENT", "partition 1 lists a broker twice")
    assert str(refusal) == server.describe() == \
        "INVALID_REPLICA_ASSIGNMENT: partition 1 lists a broker twice"
    assert (refusal.error_name, refusal.message) == (server.error_name, server.message)
    assert isinstance(refusal, ToolError) and isinstance(InputFileError("x"), ToolError)


@pytest.mark.parametrize("error", [
    KafkaRefusal("UNKNOWN_TOPIC_OR_PARTITION", "Topic 't' does not exist as expected"),
    InputFileError("create-chunk JSON file f.json is empty"),
])
def test_the_tools_print_each_as_one_error_line(capsys: pytest.CaptureFixture[str],
                                                error: ToolError) -> None:
    def fails(parser: ToolParser, args: argparse.Namespace) -> int:
        raise error

    assert run_tool("topics", fails, ToolParser(), argparse.Namespace()) == 1
    assert capsys.readouterr().err == f"Error while executing topic command : {error}\n"
