"""The schema lock: what every released record version looks like on the wire, and Kafka's rule.

``schema.lock.json`` (next to this module) records, for every record (apiKey, name) and every
struct, and for each of their versions, the ordered fields of that version: name, type, tag,
nullability and default. :func:`current_lock` derives the same description from the
declarations; :func:`check_compatible` compares the two with Kafka's compatibility rule:

- a locked version's untagged fields (names, order, types, nullability, defaults) never change;
- its tagged fields keep their tag, name, type, nullability and default;
- a locked version may gain a tagged field whose tag it has not used before;
- new versions, new records and new structs may be added;
- removing a record, a struct or a version is incompatible, and an apiKey never changes name.

A struct's versions are the versions of the records that carry it (a ``[]Struct`` field of a
record written at version v writes its elements at version v too).

Run ``python -m chunkraft.records.schema_lock --check`` to compare, ``--write`` to lock the
current declarations (refused while they are incompatible with the lock), ``--table`` to print
the records table of docs/records.md. Pure functions over plain dicts; thread-safe.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from chunkraft.records.schema import (
    FieldSpec,
    FieldType,
    StructSchema,
    all_record_schemas,
    kafka_name,
    schema_of,
)
from chunkraft.records.uuids import kafka_uuid_str

__all__ = [
    "LOCK_FORMAT",
    "LOCK_PATH",
    "check_compatible",
    "current_lock",
    "dump_lock",
    "load_lock",
    "lock_differences",
    "main",
    "records_table",
]

LOCK_FORMAT = 1
LOCK_PATH = Path(__file__).with_name("schema.lock.json")

Lock = dict[str, Any]

_EMPTY_LOCK: Lock = {"format": LOCK_FORMAT, "records": [], "structs": []}


# ---------------------------------------------------------------- deriving the lock


def _json_default(value: Any) -> Any:
    """A field default as JSON: uuids in Kafka's text form, tuples as lists."""
    if isinstance(value, uuid.UUID):
        return kafka_uuid_str(value)
    if isinstance(value, tuple):
        return [_json_default(item) for item in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    raise TypeError(f"default {value!r} has no JSON form")


def _field_entry(spec: FieldSpec, version: int) -> dict[str, Any]:
    return {
        "name": kafka_name(spec.name),
        "type": spec.type_name(),
        "tag": spec.tag,
        "nullable": spec.nullable_in(version),
        "default": _json_default(spec.default),
    }


def _version_entry(schema: StructSchema, version: int) -> dict[str, Any]:
    return {
        "version": version,
        "fields": [_field_entry(spec, version) for spec in schema.fields_in(version)],
    }


def _struct_versions() -> dict[str, tuple[StructSchema, set[int]]]:
    """Every struct reachable from a record, with the record versions that write it."""
    found: dict[str, tuple[StructSchema, set[int]]] = {}

    def visit(schema: StructSchema, version: int) -> None:
        for spec in schema.fields_in(version):
            if spec.type is not FieldType.STRUCT:
                continue
            assert spec.struct is not None
            inner = schema_of(spec.struct)
            versions = found.setdefault(inner.name, (inner, set()))[1]
            if version not in versions:
                versions.add(version)
                visit(inner, version)

    for record in all_record_schemas():
        for version in record.versions:
            visit(record, version)
    return found


def current_lock() -> Lock:
    """The lock that the current declarations produce (records by apiKey, structs by name)."""
    records = [
        {
            "apiKey": schema.api_key,
            "name": schema.name,
            "versions": [_version_entry(schema, v) for v in schema.versions],
        }
        for schema in all_record_schemas()
    ]
    structs = [
        {"name": name, "versions": [_version_entry(schema, v) for v in sorted(versions)]}
        for name, (schema, versions) in sorted(_struct_versions().items())
    ]
    return {"format": LOCK_FORMAT, "records": records, "structs": structs}


# ---------------------------------------------------------------- comparing


def _describe(field: dict[str, Any]) -> str:
    tag = "" if field.get("tag") is None else f" tag {field['tag']}"
    null = " nullable" if field.get("nullable") else ""
    return f"{field.get('name')} {field.get('type')}{tag}{null} default {field.get('default')!r}"


def _versions_by_number(entry: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    return {v["version"]: v["fields"] for v in entry["versions"]}


def _check_version(
    where: str, locked: list[dict[str, Any]], current: list[dict[str, Any]]
) -> list[str]:
    problems: list[str] = []
    old_untagged = [f for f in locked if f.get("tag") is None]
    new_untagged = [f for f in current if f.get("tag") is None]
    for index in range(max(len(old_untagged), len(new_untagged))):
        old = old_untagged[index] if index < len(old_untagged) else None
        new = new_untagged[index] if index < len(new_untagged) else None
        if old == new:
            continue
        if old is None:
            assert new is not None
            problems.append(f"{where}: untagged field {_describe(new)} added at position {index}")
        elif new is None:
            problems.append(f"{where}: untagged field {_describe(old)} removed")
        else:
            problems.append(
                f"{where}: untagged field {index} was {_describe(old)}, is now {_describe(new)}"
            )
    old_tagged = {f["tag"]: f for f in locked if f.get("tag") is not None}
    new_tagged = {f["tag"]: f for f in current if f.get("tag") is not None}
    for tag, old in sorted(old_tagged.items()):
        new = new_tagged.get(tag)
        if new is None:
            problems.append(f"{where}: tagged field {_describe(old)} removed")
        elif new != old:
            problems.append(f"{where}: tagged field {_describe(old)} is now {_describe(new)}")
    return problems


def _check_entries(
    kind: str,
    locked: Iterable[dict[str, Any]],
    current: Iterable[dict[str, Any]],
    key: str,
) -> list[str]:
    problems: list[str] = []
    current_by_key = {entry[key]: entry for entry in current}
    for old in locked:
        label = f"{kind} {old['name']}"
        if key != "name":
            label += f" (apiKey {old[key]})"
        new = current_by_key.get(old[key])
        if new is None:
            problems.append(f"{label} was removed")
            continue
        if new["name"] != old["name"]:
            problems.append(f"apiKey {old[key]} was {old['name']}, is now {new['name']}")
            continue
        new_versions = _versions_by_number(new)
        for version, fields in sorted(_versions_by_number(old).items()):
            if version not in new_versions:
                problems.append(f"{label}: version {version} was removed")
                continue
            problems += _check_version(f"{old['name']} v{version}", fields, new_versions[version])
    return problems


def check_compatible(locked: Lock, current: Lock) -> list[str]:
    """Every way ``current`` breaks what ``locked`` promised, as sentences; [] when compatible."""
    if locked.get("format") != LOCK_FORMAT:
        return [f"lock format {locked.get('format')!r} is not {LOCK_FORMAT}"]
    try:
        return _check_entries(
            "record", locked["records"], current["records"], "apiKey"
        ) + _check_entries("struct", locked["structs"], current["structs"], "name")
    except (KeyError, TypeError) as exc:
        return [f"lock is malformed: {exc!r}"]


def lock_differences(locked: Lock, current: Lock) -> list[str]:
    """Versions and records declared but not yet locked, or locked but changed (compatibly)."""
    differences: list[str] = []
    for kind, key in (("records", "apiKey"), ("structs", "name")):
        old_by_key = {entry[key]: entry for entry in locked.get(kind, [])}
        for new in current[kind]:
            old = old_by_key.get(new[key])
            old_versions = _versions_by_number(old) if old else {}
            for version, fields in sorted(_versions_by_number(new).items()):
                if version not in old_versions:
                    differences.append(f"{new['name']} v{version} is not locked")
                elif old_versions[version] != fields:
                    differences.append(f"{new['name']} v{version} differs from its lock")
    return differences


def records_table() -> str:
    """The Markdown table of every record (apiKey, name, versions, about) that docs/records.md
    shows; ``--table`` prints it."""
    lines = ["| apiKey | record | versions | about |", "|---:|---|---|---|"]
    for schema in all_record_schemas():
        lines.append(
            f"| {schema.api_key} | {schema.name} | {schema.valid_versions} | {schema.about} |"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the lock file


def dump_lock(lock: Lock) -> str:
    """The lock as the file holds it: sorted keys, two-space indentation, final newline."""
    return json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load_lock(path: Path = LOCK_PATH) -> Lock:
    """Reads a lock file."""
    loaded: Lock = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def main(argv: Sequence[str] | None = None) -> int:
    """``--check``: exit 1 if the declarations break the lock or are not all locked.

    ``--write``: lock the current declarations; refused (exit 1) while they break the lock.
    """
    parser = argparse.ArgumentParser(
        prog="python -m chunkraft.records.schema_lock",
        description="Check or write the metadata record schema lock.",
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="compare the declarations to the lock")
    action.add_argument("--write", action="store_true", help="lock the current declarations")
    action.add_argument("--table", action="store_true", help="print the records as Markdown")
    parser.add_argument("--lock", type=Path, default=LOCK_PATH, help="the lock file to use")
    args = parser.parse_args(argv)
    if args.table:
        print(records_table(), end="")
        return 0
    path: Path = args.lock
    current = current_lock()
    locked = load_lock(path) if path.exists() else _EMPTY_LOCK
    problems = check_compatible(locked, current)
    for problem in problems:
        print(f"incompatible: {problem}", file=sys.stderr)
    if args.write:
        if problems:
            print(f"{path}: not written; a released version may never change", file=sys.stderr)
            return 1
        path.write_text(dump_lock(current), encoding="utf-8")
        count = sum(len(record["versions"]) for record in current["records"])
        print(f"{path}: locked {count} record versions")
        return 0
    if problems:
        return 1
    pending = lock_differences(locked, current)
    for difference in pending:
        print(f"not locked: {difference}", file=sys.stderr)
    if pending:
        print("run: python -m chunkraft.records.schema_lock --write", file=sys.stderr)
        return 1
    print(f"{path}: the declarations match the lock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
