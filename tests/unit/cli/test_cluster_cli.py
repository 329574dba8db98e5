"""``chunkraft cluster`` (chunkraft.cli.cluster): a state file it cannot use is an error line,
never a traceback, and nothing starts. (Hostile bytes: tests/unit/cli/test_input_files.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.cli.cluster import STATE_FILE, open_local_cluster
from chunkraft.cli.errors import InputFileError
from chunkraft.cli.main import main


@pytest.mark.parametrize(("text", "problem"), [
    ("[]", "AttributeError"),
    ('{"nodes": {}}', "KeyError: 'cluster_id'"),
    ('{"nodes": 3, "cluster_id": "x", "password": "p"}', "TypeError"),
    ('{"nodes": {"a": [1, 2]}, "cluster_id": "x", "password": "p"}', ""),
])
def test_a_state_file_of_the_wrong_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         text: str, problem: str) -> None:
    state = tmp_path / STATE_FILE
    state.write_text(text)
    with pytest.raises(InputFileError, match=f"cluster state file {state} is not one chunkraft "
                                             "cluster wrote"):
        open_local_cluster(tmp_path, 3)
    assert main(["cluster", "--dir", str(tmp_path), "--exit"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cluster state file {state} is not one chunkraft cluster "
                          "wrote (") and problem in err
    assert err.count("\n") == 1 and state.read_text() == text  # not overwritten
