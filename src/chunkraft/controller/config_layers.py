"""Settings read in layers: a properties file, then environment variables, then overrides.

Shared by the controller's and the broker agent's settings tables. Each property's text is kept
with where it came from (the file and line, the variable, the command line), so every error
names both; a later layer wins. Unknown names in the file or the overrides are refused with the
closest known name as a hint; environment variables are looked up by the known names only, since
other variables with the same prefix may belong to other tools.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from chunkraft.controller.properties import parse_properties
from chunkraft.errors import ConfigError

__all__ = ["COMMAND_LINE", "RawSetting", "SettingLike", "read_layers"]

COMMAND_LINE = "command line"
"""The source of a property given with ``--override``."""


class SettingLike(Protocol):
    """What the layers need of a row of a settings table."""

    @property
    def name(self) -> str: ...

    @property
    def env_var(self) -> str: ...

    @property
    def parse(self) -> Callable[[str], Any]: ...


class RawSetting:
    """A property's text (stripped) and where it came from, before parsing."""

    __slots__ = ("source", "text")

    def __init__(self, text: str, source: str) -> None:
        self.text = text.strip()
        self.source = source


def _unknown(name: str, source: str, settings: Sequence[SettingLike]) -> ConfigError:
    close = difflib.get_close_matches(name, [s.name for s in settings], n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return ConfigError(f"unknown setting {name!r} ({source}){hint}", setting=name, source=source)


def _file_layer(path: str, settings: Sequence[SettingLike], known: set[str]
                ) -> dict[str, RawSetting]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ConfigError(f"cannot read config file {path}: {reason}", source=path) from error
    try:
        entries = parse_properties(text)
    except ValueError as error:
        raise ConfigError(f"config file {path}: {error}", source=path) from None
    layer: dict[str, RawSetting] = {}
    for name, entry in entries.items():
        source = f"file {path}, line {entry.line}"
        if name not in known:
            raise _unknown(name, source, settings)
        layer[name] = RawSetting(entry.value, source)
    return layer


def read_layers(settings: Sequence[SettingLike], config_file: str | None,
                environ: Mapping[str, str], overrides: Mapping[str, str]
                ) -> tuple[dict[str, RawSetting], dict[str, Any]]:
    """``(raw, values)``: each property set in some layer, by name, with its winning text and
    source, and its parsed value (properties whose parse answered None, "not set", are left
    out of ``values``). Raises ConfigError naming the property and its source."""
    known = {s.name for s in settings}
    raw: dict[str, RawSetting] = (
        _file_layer(config_file, settings, known) if config_file is not None else {})
    raw.update({s.name: RawSetting(environ[s.env_var], f"environment variable {s.env_var}")
                for s in settings if s.env_var in environ})
    for name, text in overrides.items():
        if name not in known:
            raise _unknown(name, COMMAND_LINE, settings)
        raw[name] = RawSetting(text, COMMAND_LINE)
    by_name = {s.name: s for s in settings}
    values: dict[str, Any] = {}
    for name, item in raw.items():
        try:
            value = by_name[name].parse(item.text)
        except ValueError as error:
            raise ConfigError(f"{name} ({item.source}): {error}", setting=name,
                              source=item.source) from None
        if value is not None:
            values[name] = value
    return raw, values
