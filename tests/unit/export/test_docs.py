"""docs/export.md lists every table and every column as declared (type, nullability, meaning):
the column tables there are exactly what :func:`column_table` renders."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from chunkraft.export.tables import (
    BROKER_STATE_TABLES,
    CONTROLLER_TABLES,
    TableSpec,
    declared_fields,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "export.md"


def column_table(spec: TableSpec) -> str:
    """The markdown section of one table: its heading, what it holds, key, and columns."""
    lines = [f"### `{spec.name}`", "", f"{spec.about} Key: "
             + ", ".join(f"`{k}`" for k in spec.key) + ".", "",
             "| column | type | null | meaning |", "|---|---|---|---|"]
    schema = spec.schema
    for field_spec in declared_fields(spec.row):
        field = schema.field(field_spec.name)
        kind = str(field.type).replace("<item: ", "<").replace("|", "\\|")
        if isinstance(field.type, pa.ListType) and isinstance(field.type.value_type,
                                                               pa.StructType):
            kind = "list<struct<" + ", ".join(
                f"{f.name}: {f.type}" for f in field.type.value_type) + ">>"
        lines.append(f"| `{field.name}` | {kind} | {'yes' if field.nullable else 'no'} | "
                     f"{field_spec.about} |")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("spec", CONTROLLER_TABLES + BROKER_STATE_TABLES, ids=lambda s: s.name)
def test_every_table_is_documented_as_declared(spec: TableSpec) -> None:
    assert column_table(spec) in DOC.read_text(encoding="utf-8"), (
        f"docs/export.md is out of date for {spec.name}; it should contain:\n"
        + column_table(spec))
