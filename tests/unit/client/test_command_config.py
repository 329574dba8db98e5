"""CommandConfig (chunkraft.client.command_config): the Kafka-style --command-config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.client.command_config import CommandConfig, CommandConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_token_in_the_file_becomes_the_bearer_header(tmp_path: Path) -> None:
    config = CommandConfig.load(write(tmp_path / "admin.properties",
                                      "# the admin\nbearer.token=crt_abc\n"), environment={})
    assert config.token == "crt_abc"
    assert config.headers() == {"authorization": "Bearer crt_abc"}


def test_a_token_file_is_read_relative_to_the_config_file(tmp_path: Path) -> None:
    write(tmp_path / "token.txt", "crt_from_file\n")
    config = CommandConfig.load(write(tmp_path / "c.properties", "bearer.token.file=token.txt\n"),
                                environment={})
    assert config.token == "crt_from_file"


def test_the_environment_token_is_the_fallback(tmp_path: Path) -> None:
    assert CommandConfig.load(None, environment={"CHUNKRAFT_TOKEN": "crt_env"}).token == "crt_env"
    assert CommandConfig.load(None, environment={}).headers() == {}
    config = CommandConfig.load(write(tmp_path / "c.properties", "ssl.ca.file=ca.pem\n"),
                                environment={"CHUNKRAFT_TOKEN": "crt_env"})
    assert config.token == "crt_env" and config.ca_file == tmp_path / "ca.pem"
    config = CommandConfig.load(write(tmp_path / "d.properties", "bearer.token=crt_file\n"),
                                environment={"CHUNKRAFT_TOKEN": "crt_env"})
    assert config.token == "crt_file"


@pytest.mark.parametrize(("text", "message"), [
    ("bearer.tokn=x\n", "unknown setting bearer.tokn"),
    ("bearer.token=a\nbearer.token=b\n", "set twice"),
    ("just words\n", "expected key=value"),
    ("bearer.token=a\nbearer.token.file=t\n", "not both"),
    ("bearer.token.file=missing.txt\n", "cannot read bearer.token.file"),
    ("ssl.key.file=k.pem\n", "ssl.key.file needs ssl.certificate.file"),
])
def test_mistakes_are_refused_with_a_message(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(CommandConfigError, match=message):
        CommandConfig.load(write(tmp_path / "c.properties", text), environment={})


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandConfigError,
                       match=r"cannot read command config file .*: No such file or directory"):
        CommandConfig.load(tmp_path / "nope.properties", environment={})


def test_an_unreadable_ca_file_is_a_clear_error(tmp_path: Path) -> None:
    config = CommandConfig.load(write(tmp_path / "c.properties", "ssl.ca.file=ca.pem\n"),
                                environment={})
    with pytest.raises(CommandConfigError, match="cannot load the TLS files"):
        config.ssl_context()
