"""docs/cli.md lists every configuration key with its type and default (the table was generated
from chunkraft.configs.keys; this keeps it in step)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.configs.keys import BROKER_KEYS, TOPIC_KEYS, ConfigKey

CLI_DOC = Path(__file__).resolve().parents[3] / "docs" / "cli.md"


@pytest.mark.parametrize("key", [*TOPIC_KEYS.values(),
                                 *(k for k in BROKER_KEYS.values()
                                   if k.name not in {t.synonym for t in TOPIC_KEYS.values()})],
                         ids=lambda k: k.name)
def test_every_key_is_in_the_cli_docs_table(key: ConfigKey) -> None:
    text = CLI_DOC.read_text()
    if key.topic:
        row = f"| `{key.name}` | `{key.synonym}` | {key.type.value} | `{key.default}` |"
    else:
        row = f"| `{key.name}` | {key.type.value} | `{key.default}` |"
    assert row in text
