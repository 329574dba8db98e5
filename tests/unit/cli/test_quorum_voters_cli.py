"""``chunkraft quorum add-controller / remove-controller`` (chunkraft.cli.quorum_voters): the
new controller read from its own properties file, the flags' rules, the printed voters, and the
error line when no controller answers. Against real quorums:
tests/integration/test_quorum_membership.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.cli.main import main
from chunkraft.cli.quorum_voters import controller_from_config, format_voters
from chunkraft.local.node_process import free_ports

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "controller.properties"
    path.write_text(
        "node.id=4\n"
        f"cluster.id={CLUSTER}\n"
        "controller.quorum.voters=2@198.18.0.2:9093,3@198.18.0.3:9093,4@198.18.0.4:9093\n"
        "controller.http.urls=2@http://198.18.0.2:9090,3@http://198.18.0.3:9090,"
        "4@http://198.18.0.4:9090\n"
        "listeners=http://198.18.0.4:9090\n"
        f"data.dir={tmp_path / 'data'}\n"
        "raft.password=secret-secret-secret\n"
        "auth.allow.anonymous=true\n", encoding="utf-8")
    return path


def test_the_new_controller_is_read_from_its_properties_file(tmp_path: Path) -> None:
    assert controller_from_config(str(_config(tmp_path))) == {
        "controller_id": 4, "raft_address": "198.18.0.4:9093",
        "http_url": "http://198.18.0.4:9090"}


def test_voters_print_one_line_each() -> None:
    text = format_voters({"voters": [
        {"node_id": 2, "address": "h2:9093", "connected": True, "caught_up": True},
        {"node_id": 4, "address": "h4:9093", "connected": True, "caught_up": False},
        {"node_id": None, "address": "h9:9093", "connected": False, "caught_up": False}]})
    assert text.splitlines() == ["     2  h2:9093  (caught up)",
                                 "     4  h4:9093  (catching up)",
                                 "     ?  h9:9093  (not connected)"]


def test_add_needs_a_config_or_all_three_flags(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["quorum", "add-controller", "--bootstrap-server", "http://127.0.0.1:1",
                   "--controller-id", "4"])
    assert status == 1
    assert capsys.readouterr().err.strip() == (
        "Error while executing quorum command : give --controller-config, or --raft-address, "
        "--http-url")


def test_no_controller_answering_is_one_error_line(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chunkraft.cli.quorum_voters.CHANGE_TIMEOUT", 0.5)
    (port,) = free_ports(1)
    status = main(["quorum", "remove-controller", "--bootstrap-server",
                   f"http://127.0.0.1:{port}", "--controller-id", "1"])
    assert status == 1
    err = capsys.readouterr().err
    assert err.startswith("Error while executing quorum command : NETWORK_EXCEPTION")
    assert "Traceback" not in err
