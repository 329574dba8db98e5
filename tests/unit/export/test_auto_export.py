"""The controller's automatic export: a detached process exports a dump through a hard link it
removes afterwards, and old exports are pruned."""

from __future__ import annotations

import json
from pathlib import Path

from chunkraft.controller.raft.dump import write_dump
from chunkraft.export.auto_export import export_name, prune_exports, start_dump_export
from chunkraft.export.manifest import MANIFEST_NAME, Manifest
from tests.unit.export.samples import CLUSTER_ID, sample_image


def write_sample_dump(path: Path, offset: int) -> None:
    write_dump(path, image=sample_image(offset=offset, epoch=2), cluster_id=CLUSTER_ID, keys=[],
               last_entry=(b"", 1, 2), previous_entry=(b"", 0, 2), members=["a:1"])


def fake_export(directory: Path, offset: int) -> Path:
    path = directory / export_name(offset, 1)
    path.mkdir(parents=True)
    (path / MANIFEST_NAME).write_text(json.dumps({}))
    return path


def test_a_dump_is_exported_by_a_child_that_removes_its_link(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    write_sample_dump(dump, 41)
    exports = tmp_path / "exports"
    child = start_dump_export(dump, 41, 2, exports, retain=3)
    assert child is not None
    assert child.wait(120) == 0, (exports / ".export.log").read_text()
    out = exports / export_name(41, 2)
    manifest = Manifest.read(out)
    assert (manifest.offset, manifest.epoch) == (41, 2)
    assert manifest.tables["topics"].rows == 2
    assert sorted(p.name for p in exports.iterdir()) == [".export.log", out.name]
    assert dump.exists()
    assert start_dump_export(dump, 41, 2, exports, retain=3) is None  # already exported


def test_prune_keeps_the_newest_complete_exports(tmp_path: Path) -> None:
    made = [fake_export(tmp_path, offset) for offset in (5, 50, 500, 5000)]
    incomplete = tmp_path / export_name(9999, 1)
    incomplete.mkdir()
    (tmp_path / "other").mkdir()
    assert prune_exports(tmp_path, 2) == made[:2]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [made[2].name, made[3].name, incomplete.name, "other"])
