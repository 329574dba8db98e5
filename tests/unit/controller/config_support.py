"""Shared by the controller configuration tests: a complete set of settings and the three
sources (file, environment, overrides) a test loads a config from."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from chunkraft.controller.config import ControllerConfig, load_controller_config
from chunkraft.errors import ConfigError

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
PASSWORD = "correct-horse-battery-staple"
VOTERS = "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095"
HTTP_URLS = "1@http://127.0.0.1:9090,2@http://127.0.0.1:9091,3@http://127.0.0.1:9092"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "operations.md"


def base_values(data_dir: Path) -> dict[str, str]:
    return {
        "node.id": "1",
        "cluster.id": CLUSTER,
        "controller.quorum.voters": VOTERS,
        "controller.http.urls": HTTP_URLS,
        "data.dir": str(data_dir),
        "raft.password": PASSWORD,
        "listeners": "http://127.0.0.1:9090",
    }


def write_properties(path: Path, values: Mapping[str, str]) -> str:
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()))
    return str(path)


class Layers:
    """Builds the three sources for one test and loads a config from them."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.file = base_values(tmp_path / "data")
        self.env: dict[str, str] = {}
        self.overrides: dict[str, str] = {}

    @property
    def path(self) -> Path:
        return self.tmp_path / "controller.properties"

    def load(self) -> ControllerConfig:
        return load_controller_config(
            write_properties(self.path, self.file), self.overrides, self.env
        )

    def error(self) -> ConfigError:
        with pytest.raises(ConfigError) as caught:
            self.load()
        return caught.value

    def line_of(self, key: str) -> int:
        return list(self.file).index(key) + 1
