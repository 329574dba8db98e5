"""How the admin tools speak (chunkraft.cli.output): every word after the tool's name reaches
its own parser, help exits 0, and errors become Kafka's one-line message with status 1."""

from __future__ import annotations

import argparse

import pytest

from chunkraft.cli.main import main
from chunkraft.cli.output import ToolError, ToolParser, fail, run_tool
from chunkraft.client.admin import AdminError
from chunkraft.client.command_config import CommandConfigError


@pytest.mark.parametrize("tool", ["topics", "chunks", "acls"])
def test_help_goes_to_the_tools_own_parser(tool: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([tool, "--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: chunkraft {tool} ")


def test_the_top_level_help_lists_the_tools(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "topics" in out and "chunks" in out and "acls" in out


@pytest.mark.parametrize(("error", "line"), [
    (AdminError(409, "TOPIC_ALREADY_EXISTS", "Topic 't' already exists."),
     "Error while executing topic command : TOPIC_ALREADY_EXISTS: Topic 't' already exists."),
    (ToolError("no good"), "Error while executing topic command : no good"),
    (CommandConfigError("bad file"), "Error while executing topic command : bad file"),
])
def test_user_errors_become_one_line(error: Exception, line: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    def run(parser: ToolParser, args: argparse.Namespace) -> int:
        raise error

    assert run_tool("topics", run, ToolParser(prog="t"), argparse.Namespace()) == 1
    assert capsys.readouterr().err == line + "\n"


def test_fail_names_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert fail("acl", "nope") == 1
    assert capsys.readouterr().err == "Error while executing acl command : nope\n"
