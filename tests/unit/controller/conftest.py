"""Fixtures shared by the controller's unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.controller.config_support import Layers


@pytest.fixture
def layers(tmp_path: Path) -> Layers:
    """The three sources of a controller configuration (file, environment, overrides)."""
    return Layers(tmp_path)
