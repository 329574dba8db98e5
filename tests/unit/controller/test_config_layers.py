"""Settings read in layers (chunkraft.controller.config_layers): file < environment < overrides,
each value with its source, unknown names refused with a hint."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

from chunkraft.controller.config_layers import COMMAND_LINE, read_layers
from chunkraft.errors import ConfigError


def _port(text: str) -> int | None:
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a port")
    return int(text)


class Row(NamedTuple):
    name: str
    parse: Any

    @property
    def env_var(self) -> str:
        return "T_" + self.name.upper().replace(".", "_")


SETTINGS = [Row("http.port", _port), Row("node.id", _port), Row("log.dir", str)]


def test_later_layers_win_and_keep_their_source(tmp_path: Path) -> None:
    file = tmp_path / "a.properties"
    file.write_text("http.port=1\nnode.id=2\nlog.dir=/data\n")
    raw, values = read_layers(SETTINGS, str(file), {"T_NODE_ID": "3", "OTHER": "x"},
                              {"http.port": " 4 "})
    assert values == {"http.port": 4, "node.id": 3, "log.dir": "/data"}
    assert raw["http.port"].source == COMMAND_LINE
    assert raw["node.id"].source == "environment variable T_NODE_ID"
    assert raw["log.dir"].source == f"file {file}, line 3"


def test_an_empty_value_means_not_set() -> None:
    raw, values = read_layers(SETTINGS, None, {}, {"node.id": ""})
    assert "node.id" in raw and "node.id" not in values


def test_unknown_names_and_bad_values_name_their_source(tmp_path: Path) -> None:
    file = tmp_path / "b.properties"
    file.write_text("\nhttp.prot=1\n")
    with pytest.raises(ConfigError, match=r"unknown setting 'http.prot' \(file .*line 2\); "
                                          r"did you mean http.port\?"):
        read_layers(SETTINGS, str(file), {}, {})
    with pytest.raises(ConfigError, match=r"unknown setting 'nodeid' \(command line\)"):
        read_layers(SETTINGS, None, {}, {"nodeid": "1"})
    with pytest.raises(ConfigError, match=r"node.id \(environment variable T_NODE_ID\): "
                                          r"'x' is not a port"):
        read_layers(SETTINGS, None, {"T_NODE_ID": "x"}, {})
    with pytest.raises(ConfigError, match="cannot read config file"):
        read_layers(SETTINGS, str(tmp_path / "missing"), {}, {})
