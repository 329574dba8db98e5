"""The schema lock (chunkraft.records.schema_lock): the committed lock, and Kafka's rule."""

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import pytest

from chunkraft.records import schema as schema_module
from chunkraft.records.schema import INT32, INT64, STRING, metadata_record
from chunkraft.records.schema_lock import (
    LOCK_PATH,
    check_compatible,
    current_lock,
    dump_lock,
    load_lock,
    lock_differences,
    main,
    records_table,
)

Lock = dict[str, Any]


def _record(lock: Lock, name: str) -> dict[str, Any]:
    return next(r for r in lock["records"] if r["name"] == name)


def _struct(lock: Lock, name: str) -> dict[str, Any]:
    return next(s for s in lock["structs"] if s["name"] == name)


def _fields(entry: dict[str, Any], version: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = next(
        v["fields"] for v in entry["versions"] if v["version"] == version
    )
    return found


def _field(entry: dict[str, Any], version: int, name: str) -> dict[str, Any]:
    return next(f for f in _fields(entry, version) if f["name"] == name)


# ---------------------------------------------------------------- the committed lock


def test_committed_lock_is_compatible_with_the_declarations() -> None:
    assert check_compatible(load_lock(), current_lock()) == []


def test_committed_lock_is_up_to_date() -> None:
    # Fails after a compatible change too (a new version or record, a new tagged field):
    # run `python -m chunkraft.records.schema_lock --write` and commit the lock with the change.
    assert lock_differences(load_lock(), current_lock()) == []
    assert load_lock() == current_lock()


def test_committed_lock_is_written_canonically() -> None:
    text = LOCK_PATH.read_text(encoding="utf-8")
    assert text == dump_lock(json.loads(text))
    assert text.startswith('{\n  "format": 1,\n')


def test_lock_describes_each_version() -> None:
    lock = current_lock()
    assert [r["apiKey"] for r in lock["records"]] == sorted(r["apiKey"] for r in lock["records"])
    partition = _record(lock, "PartitionRecord")
    assert partition["apiKey"] == 3
    assert [v["version"] for v in partition["versions"]] == [0, 1, 2, 3]
    assert [f["name"] for f in _fields(partition, 0)][:3] == ["PartitionId", "TopicId", "Replicas"]
    assert "Directories" not in [f["name"] for f in _fields(partition, 0)]
    assert _field(partition, 3, "StartOffset") == {
        "name": "StartOffset",
        "type": "int64",
        "tag": 3,
        "nullable": False,
        "default": -1,
    }
    assert _field(partition, 1, "Directories")["type"] == "[]uuid"
    assert _field(partition, 3, "PriorPartitionEpochs")["type"] == "[]PriorPartitionEpoch"
    assert _field(partition, 2, "EligibleLeaderReplicas")["nullable"] is True
    assert _field(partition, 0, "TopicId")["default"] == "AAAAAAAAAAAAAAAAAAAAAA"
    assert _field(partition, 0, "Replicas")["default"] == []
    change = _record(lock, "ChunkChangeRecord")
    assert _field(change, 0, "Directories") == {
        "name": "Directories",
        "type": "[]uuid",
        "tag": 1,
        "nullable": True,
        "default": None,
    }
    assert _fields(_record(lock, "NoOpRecord"), 0) == []


def test_structs_are_locked_in_the_versions_that_write_them() -> None:
    lock = current_lock()
    assert [s["name"] for s in lock["structs"]] == [
        "BrokerEndpoint",
        "BrokerFeature",
        "PriorPartitionEpoch",
    ]
    assert [v["version"] for v in _struct(lock, "BrokerEndpoint")["versions"]] == [0, 1, 2, 3]
    assert [v["version"] for v in _struct(lock, "PriorPartitionEpoch")["versions"]] == [3]
    assert [f["type"] for f in _fields(_struct(lock, "BrokerEndpoint"), 0)] == [
        "string",
        "string",
        "uint16",
        "int16",
    ]


def test_lock_is_plain_json() -> None:
    lock = current_lock()
    assert json.loads(dump_lock(lock)) == lock


# ---------------------------------------------------------------- Kafka's rule


def _changed(change: Callable[[Lock], None]) -> list[str]:
    locked = current_lock()
    current = copy.deepcopy(locked)
    change(current)
    return check_compatible(locked, current)


def _rename_untagged(lock: Lock) -> None:
    _field(_record(lock, "TopicRecord"), 0, "Name")["name"] = "TopicName"


def _rename_tagged(lock: Lock) -> None:
    _field(_record(lock, "PartitionRecord"), 3, "StartOffset")["name"] = "FirstOffset"


def _change_type(lock: Lock) -> None:
    _field(_record(lock, "ChunkRecord"), 0, "ChunkEpoch")["type"] = "int64"


def _change_tagged_type(lock: Lock) -> None:
    _field(_record(lock, "ChunkChangeRecord"), 0, "Replicas")["type"] = "[]int64"


def _change_tag(lock: Lock) -> None:
    _field(_record(lock, "PartitionChangeRecord"), 0, "Leader")["tag"] = 11


def _untag(lock: Lock) -> None:
    _field(_record(lock, "PartitionChangeRecord"), 0, "Leader")["tag"] = None


def _change_default(lock: Lock) -> None:
    _field(_record(lock, "RegisterBrokerRecord"), 0, "Fenced")["default"] = False


def _change_tagged_default(lock: Lock) -> None:
    _field(_record(lock, "PartitionChangeRecord"), 0, "Leader")["default"] = -1


def _change_nullable(lock: Lock) -> None:
    _field(_record(lock, "RegisterBrokerRecord"), 1, "Rack")["nullable"] = False


def _change_tagged_nullable(lock: Lock) -> None:
    _field(_record(lock, "ChunkChangeRecord"), 0, "Directories")["nullable"] = False


def _drop_version(lock: Lock) -> None:
    partition = _record(lock, "PartitionRecord")
    partition["versions"] = [v for v in partition["versions"] if v["version"] != 1]


def _drop_last_version(lock: Lock) -> None:
    _record(lock, "RegisterBrokerRecord")["versions"].pop()


def _drop_record(lock: Lock) -> None:
    lock["records"] = [r for r in lock["records"] if r["name"] != "ChunkChangeRecord"]


def _rename_record(lock: Lock) -> None:
    _record(lock, "ChunkRecord")["name"] = "InactiveChunkRecord"


def _reorder(lock: Lock) -> None:
    fields = _fields(_record(lock, "ChunkRecord"), 0)
    fields[2], fields[3] = fields[3], fields[2]


def _add_untagged_to_old_version(lock: Lock) -> None:
    _fields(_record(lock, "PartitionRecord"), 2).append(
        {"name": "Extra", "type": "int32", "tag": None, "nullable": False, "default": 0}
    )


def _insert_untagged_in_old_version(lock: Lock) -> None:
    _fields(_record(lock, "TopicRecord"), 0).insert(
        0, {"name": "Extra", "type": "int8", "tag": None, "nullable": False, "default": 0}
    )


def _remove_untagged(lock: Lock) -> None:
    _fields(_record(lock, "ChunkRecord"), 0).pop()


def _remove_tagged(lock: Lock) -> None:
    fields = _fields(_record(lock, "PartitionRecord"), 3)
    fields[:] = [f for f in fields if f["name"] != "PriorPartitionEpochs"]


def _change_struct_field(lock: Lock) -> None:
    _field(_struct(lock, "BrokerEndpoint"), 2, "Port")["type"] = "int32"


def _rename_struct_type(lock: Lock) -> None:
    _field(_record(lock, "RegisterBrokerRecord"), 0, "EndPoints")["type"] = "[]Endpoint"


def _drop_struct(lock: Lock) -> None:
    lock["structs"] = [s for s in lock["structs"] if s["name"] != "PriorPartitionEpoch"]


def _drop_struct_version(lock: Lock) -> None:
    _struct(lock, "BrokerFeature")["versions"].pop(0)


INCOMPATIBLE = {
    "rename an untagged field": (_rename_untagged, "TopicRecord v0"),
    "rename a tagged field": (_rename_tagged, "PartitionRecord v3"),
    "change a type": (_change_type, "ChunkEpoch int32"),
    "change a tagged field's type": (_change_tagged_type, "[]int64"),
    "change a tag": (_change_tag, "tag 1"),
    "untag a field": (_untag, "PartitionChangeRecord v0"),
    "change a default": (_change_default, "Fenced"),
    "change a tagged default": (_change_tagged_default, "Leader"),
    "change nullability": (_change_nullable, "RegisterBrokerRecord v1"),
    "change tagged nullability": (_change_tagged_nullable, "Directories"),
    "drop a version": (_drop_version, "version 1 was removed"),
    "drop the latest version": (_drop_last_version, "version 3 was removed"),
    "drop a record": (_drop_record, "ChunkChangeRecord (apiKey 29) was removed"),
    "rename a record": (_rename_record, "apiKey 28 was ChunkRecord, is now InactiveChunkRecord"),
    "reorder fields": (_reorder, "ChunkRecord v0"),
    "add an untagged field to an old version": (_add_untagged_to_old_version, "Extra int32"),
    "insert an untagged field": (_insert_untagged_in_old_version, "TopicRecord v0"),
    "remove an untagged field": (_remove_untagged, "Epoch int32"),
    "remove a tagged field": (_remove_tagged, "PriorPartitionEpochs"),
    "change a struct field": (_change_struct_field, "BrokerEndpoint v2"),
    "rename a struct": (_rename_struct_type, "[]Endpoint"),
    "drop a struct": (_drop_struct, "struct PriorPartitionEpoch was removed"),
    "drop a struct version": (_drop_struct_version, "BrokerFeature: version 0 was removed"),
}


@pytest.mark.parametrize("change", list(INCOMPATIBLE), ids=list(INCOMPATIBLE))
def test_incompatible_changes_are_reported(change: str) -> None:
    mutate, words = INCOMPATIBLE[change]
    problems = _changed(mutate)
    assert problems, change
    assert any(words in problem for problem in problems), problems


def test_a_reorder_reports_both_positions() -> None:
    problems = _changed(_reorder)
    assert len(problems) == 2
    assert "untagged field 2 was StartOffset int64" in problems[0]


def _add_version(lock: Lock) -> None:
    partition = _record(lock, "PartitionRecord")
    newest = copy.deepcopy(partition["versions"][-1])
    newest["version"] = 4
    newest["fields"].append(
        {"name": "Later", "type": "int32", "tag": None, "nullable": False, "default": 0}
    )
    partition["versions"].append(newest)


def _add_tagged_field(lock: Lock) -> None:
    _fields(_record(lock, "TopicRecord"), 0).append(
        {"name": "Labels", "type": "[]string", "tag": 0, "nullable": False, "default": []}
    )


def _add_tagged_field_with_a_new_tag(lock: Lock) -> None:
    _fields(_record(lock, "PartitionRecord"), 3).append(
        {"name": "Fresh", "type": "int64", "tag": 6, "nullable": False, "default": -1}
    )


def _add_record(lock: Lock) -> None:
    lock["records"].append(
        {"apiKey": 30, "name": "ChunkEpochRecord", "versions": [{"version": 0, "fields": []}]}
    )


def _add_struct(lock: Lock) -> None:
    lock["structs"].append({"name": "Label", "versions": [{"version": 0, "fields": []}]})


def _add_struct_version(lock: Lock) -> None:
    _struct(lock, "PriorPartitionEpoch")["versions"].append(
        {"version": 4, "fields": _fields(_struct(lock, "PriorPartitionEpoch"), 3)}
    )


COMPATIBLE = {
    "add a version": _add_version,
    "add a tagged field to an old version": _add_tagged_field,
    "add a tagged field with an unused tag": _add_tagged_field_with_a_new_tag,
    "add a record": _add_record,
    "add a struct": _add_struct,
    "add a struct version": _add_struct_version,
}


@pytest.mark.parametrize("change", list(COMPATIBLE), ids=list(COMPATIBLE))
def test_compatible_changes_are_accepted(change: str) -> None:
    assert _changed(COMPATIBLE[change]) == []


def test_a_new_tagged_field_may_not_take_a_used_tag() -> None:
    def reuse_tag(lock: Lock) -> None:
        fields = _fields(_record(lock, "PartitionRecord"), 3)
        fields[:] = [f for f in fields if f["name"] != "PriorPartitionEpochs"]
        fields.append({"name": "Other", "type": "int32", "tag": 5, "nullable": False, "default": 0})

    problems = _changed(reuse_tag)
    assert len(problems) == 1
    assert "tagged field PriorPartitionEpochs" in problems[0]
    assert "is now Other int32 tag 5" in problems[0]


def test_compatible_changes_are_reported_as_not_locked() -> None:
    locked = current_lock()
    current = copy.deepcopy(locked)
    _add_version(current)
    _add_tagged_field(current)
    assert lock_differences(locked, current) == [
        "TopicRecord v0 differs from its lock",
        "PartitionRecord v4 is not locked",
    ]


def test_a_malformed_lock_is_a_problem_not_a_crash() -> None:
    assert check_compatible({"format": 2}, current_lock()) == ["lock format 2 is not 1"]
    problems = check_compatible({"format": 1, "records": [{"name": "X"}]}, current_lock())
    assert len(problems) == 1 and "malformed" in problems[0]


# ---------------------------------------------------------------- through the declarations


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(schema_module, "_RECORDS_BY_KEY", dict(schema_module._RECORDS_BY_KEY))
    monkeypatch.setattr(schema_module, "_SCHEMAS_BY_CLASS", dict(schema_module._SCHEMAS_BY_CLASS))
    yield


def _redeclare(api_key: int, versions: str, cls: type) -> None:
    schema_module._RECORDS_BY_KEY.pop(api_key, None)
    metadata_record(api_key, versions, "A test record.")(cls)


def test_declaration_changes_are_checked(registry: None) -> None:
    class Draft(NamedTuple):
        a: Annotated[int, INT32("0+", "a")] = 0
        b: Annotated[str, STRING("1+", "b")] = ""

    _redeclare(9100, "0-1", Draft)
    locked = current_lock()
    assert _fields(_record(locked, "Draft"), 0) == [
        {"name": "A", "type": "int32", "tag": None, "nullable": False, "default": 0}
    ]

    class Draft(NamedTuple):  # type: ignore[no-redef]
        a: Annotated[int, INT32("0+", "a")] = 0
        b: Annotated[str, STRING("1+", "b")] = ""
        c: Annotated[int, INT64("2+", "c")] = 0
        d: Annotated[int, INT64("0+", "d", tag=0)] = -1

    _redeclare(9100, "0-2", Draft)
    assert check_compatible(locked, current_lock()) == []

    class Draft(NamedTuple):  # type: ignore[no-redef]
        a: Annotated[int, INT64("0+", "a")] = 0
        b: Annotated[str, STRING("1+", "b")] = ""

    _redeclare(9100, "0-1", Draft)
    problems = check_compatible(locked, current_lock())
    assert problems == [
        "Draft v0: untagged field 0 was A int32 default 0, is now A int64 default 0",
        "Draft v1: untagged field 0 was A int32 default 0, is now A int64 default 0",
    ]

    class Draft(NamedTuple):  # type: ignore[no-redef]
        a: Annotated[int, INT32("0+", "a")] = 0
        b: Annotated[str, STRING("0+", "b")] = ""

    _redeclare(9100, "0-1", Draft)
    problems = check_compatible(locked, current_lock())
    assert problems == ["Draft v0: untagged field B string default '' added at position 1"]


# ---------------------------------------------------------------- the command


def test_check_passes_on_the_committed_lock(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0
    assert "match the lock" in capsys.readouterr().out


def test_write_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "schema.lock.json"
    assert main(["--check", "--lock", str(path)]) == 1
    assert "PartitionRecord v3 is not locked" in capsys.readouterr().err
    assert main(["--write", "--lock", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == dump_lock(current_lock())
    assert main(["--check", "--lock", str(path)]) == 0


def test_check_and_write_refuse_an_incompatible_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = current_lock()
    _field(_record(lock, "TopicRecord"), 0, "Name")["type"] = "uuid"
    path = tmp_path / "schema.lock.json"
    path.write_text(dump_lock(lock), encoding="utf-8")
    assert main(["--check", "--lock", str(path)]) == 1
    assert "incompatible: TopicRecord v0: untagged field 0" in capsys.readouterr().err
    assert main(["--write", "--lock", str(path)]) == 1
    assert "not written" in capsys.readouterr().err
    assert json.loads(path.read_text(encoding="utf-8")) == lock


def test_check_reports_an_out_of_date_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = current_lock()
    _record(lock, "PartitionRecord")["versions"].pop()
    path = tmp_path / "schema.lock.json"
    path.write_text(dump_lock(lock), encoding="utf-8")
    assert main(["--check", "--lock", str(path)]) == 1
    err = capsys.readouterr().err
    assert "not locked: PartitionRecord v3 is not locked" in err
    assert "--write" in err
    assert main(["--write", "--lock", str(path)]) == 0
    assert json.loads(path.read_text(encoding="utf-8")) == current_lock()


def test_the_command_needs_an_action() -> None:
    with pytest.raises(SystemExit):
        main([])


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--table"]) == 0
    out = capsys.readouterr().out
    assert out == records_table()
    assert "| 28 | ChunkRecord | 0 | An inactive chunk" in out
    assert "| 3 | PartitionRecord | 0-3 |" in out
    assert len(out.splitlines()) == 2 + len(current_lock()["records"])


def test_docs_show_the_declared_records() -> None:
    docs = Path(__file__).parents[3] / "docs" / "records.md"
    text = docs.read_text(encoding="utf-8")
    marker = "<!-- records-table:start -->\n"
    start = text.index(marker) + len(marker)
    end = text.index("<!-- records-table:end -->")
    assert text[start:end] == records_table(), "regenerate it with schema_lock --table"
