"""The ``chunkraft`` entry point: every command in the whole parser, and a node command that
imports only its own module (a restarted broker is unfenced sooner for what it skips)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from chunkraft.cli.main import COMMANDS, GROUPS, build_parser, main


def _choices(parser: object) -> set[str]:
    actions = getattr(parser, "_subparsers")._group_actions  # noqa: B009 - argparse internals
    return set(actions[0].choices)


def test_the_whole_parser_has_every_command_and_group() -> None:
    assert _choices(build_parser()) == set(COMMANDS) | set(GROUPS)


@pytest.mark.parametrize("name", sorted(set(COMMANDS) | set(GROUPS)))
def test_a_parser_for_one_command_has_that_command_alone(name: str) -> None:
    assert _choices(build_parser(name)) == {name}


def test_an_unknown_first_word_is_refused_with_the_whole_list(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["nonsense"])
    assert raised.value.code == 2
    error = capsys.readouterr().err
    assert "invalid choice: 'nonsense'" in error
    assert "'broker'" in error and "'snapshot'" in error


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "commands:" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["broker", "controller"])
def test_a_node_command_does_not_import_the_admin_tools(command: str) -> None:
    probe = (
        "import sys\n"
        "from chunkraft.cli.main import main\n"
        "try:\n"
        f"    main([{command!r}, '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('chunkraft.cli.consume', 'chunkraft.cli.audit', 'chunkraft.audit.job',\n"
        "         'chunkraft.local.local_cluster', 'chunkraft.cli.topics')\n"
        "print('imported:', ','.join(m for m in heavy if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip().splitlines()[-1] == "imported:", done.stdout
    assert f"chunkraft {command} " in done.stdout  # its own help, printed
