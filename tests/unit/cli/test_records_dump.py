"""``chunkraft records dump`` (chunkraft.cli.records_dump) and the ``chunkraft`` entry point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from chunkraft.cli.main import main
from chunkraft.records import ChunkRecord, TopicRecord, encode_record, record_to_json
from chunkraft.records.files import LogWriter, encode_batch, snapshot_name, write_snapshot

CLUSTER_ID = uuid.UUID("6d0c5bd6-2c3e-4f5a-9b7e-1a2b3c4d5e6f")
TOPIC_ID = uuid.UUID("1f6e1bbd-64ac-4dd1-8c93-0e3a1d2b9f10")


def _records(count: int) -> list[Any]:
    records: list[Any] = [TopicRecord(name="orders", topic_id=TOPIC_ID)]
    for index in range(1, count):
        records.append(
            ChunkRecord(
                partition_id=0,
                topic_id=TOPIC_ID,
                start_offset=index * 100,
                start_timestamp=1_700_000_000_000,
                stop_offset=index * 100 + 99,
                end_offset=index * 100 + 99,
                chunk_epoch=0,
                replicas=(1, 2, 3),
                isr=(1, 2, 3),
                epoch=0,
            )
        )
    return records


def _segment(path: Path, *sizes: int, first_offset: int = 100) -> list[Any]:
    """Writes batches of ``sizes`` records at ``first_offset``; returns every record written."""
    written: list[Any] = []
    offset = first_offset
    with LogWriter.open(path, cluster_id=CLUSTER_ID) as writer:
        for size in sizes:
            records = _records(size)
            writer.append_records(records, base_offset=offset, epoch=1)
            written += records
            offset += size
    return written


def _dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[Any], str]:
    status = main(["records", "dump", *args])
    out, err = capsys.readouterr()
    return status, [json.loads(line) for line in out.splitlines()], err


def test_log_segment_dumps_one_json_line_per_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "00000000000000000100.log"
    records = _segment(path, 2, 3)

    status, lines, err = _dump(capsys, str(path))

    assert (status, err) == (0, "")
    assert [line["offset"] for line in lines] == [100, 101, 102, 103, 104]
    assert lines[0] == {"offset": 100, **record_to_json(records[0])}
    assert lines[1]["type"] == "ChunkRecord"
    assert lines[1]["version"] == 0
    assert lines[1]["data"]["startOffset"] == 100
    assert list(lines[0]) == ["offset", "type", "version", "data"]


def test_no_decode_prints_raw_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "seg.log"
    records = _segment(path, 2, first_offset=0)

    status, lines, _ = _dump(capsys, str(path), "--no-decode")

    assert status == 0
    encoded = encode_record(records[1])
    assert lines[1] == {"offset": 1, "size": len(encoded), "hex": encoded.hex()}


def test_snapshot_dump_prints_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = _records(5)
    path = write_snapshot(
        tmp_path,
        end_offset=77,
        epoch=4,
        cluster_id=CLUSTER_ID,
        records=[encode_record(record) for record in records],
        records_per_batch=2,
    )

    status, lines, err = _dump(capsys, str(path))

    assert status == 0
    assert [line["offset"] for line in lines] == [0, 1, 2, 3, 4]
    assert lines[4] == {"offset": 4, **record_to_json(records[4])}
    assert "snapshot at end offset 77, epoch 4: 5 records in 3 batches" in err


def test_torn_tail_is_reported_with_what_came_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "seg.log"
    _segment(path, 2, 3, 4)
    size = path.stat().st_size
    os.truncate(path, size - 17)

    status, lines, err = _dump(capsys, str(path))

    assert status == 1
    assert [line["offset"] for line in lines] == [100, 101, 102, 103, 104]
    assert "torn tail at byte " in err
    assert "file ends inside the batch at base offset 105" in err
    assert "2 batches / 5 records read before it" in err


def test_corrupt_batch_names_position_and_base_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "seg.log"
    first = encode_batch(
        [encode_record(_records(1)[0])], base_offset=0, epoch=0, cluster_id=CLUSTER_ID
    )
    second = bytearray(
        encode_batch([b"\x01\x02\x00"], base_offset=1, epoch=0, cluster_id=CLUSTER_ID)
    )
    second[-1] ^= 0xFF
    path.write_bytes(first + bytes(second))

    status, lines, err = _dump(capsys, str(path))

    assert status == 1
    assert len(lines) == 1
    assert f"corrupt batch at byte {len(first)}: batch at base offset 1 fails its CRC" in err
    assert "1 batches / 1 records read before it" in err


def test_undecodable_record_names_its_offset_and_the_dump_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "seg.log"
    good = encode_record(_records(1)[0])
    path.write_bytes(
        encode_batch(
            [good, b"\x01\x63\x00garbage", good], base_offset=10, epoch=0, cluster_id=CLUSTER_ID
        )
    )

    status, lines, err = _dump(capsys, str(path))

    assert status == 1
    assert [line["offset"] for line in lines] == [10, 12]
    assert "record at offset 11: unknown record apiKey 99" in err
    assert "1 records did not decode" in err


def test_incomplete_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / snapshot_name(5, 1)
    path.write_bytes(
        encode_batch([encode_record(_records(1)[0])], base_offset=0, epoch=1, cluster_id=CLUSTER_ID)
    )

    status, lines, err = _dump(capsys, str(path))

    assert status == 1
    assert len(lines) == 1
    assert "bad snapshot at byte 79: incomplete snapshot: no end-of-snapshot marker" in err


def test_torn_snapshot_is_reported_as_a_torn_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_snapshot(
        tmp_path,
        end_offset=5,
        epoch=1,
        cluster_id=CLUSTER_ID,
        records=[encode_record(r) for r in _records(3)],
    )
    os.truncate(path, path.stat().st_size - 1)

    status, lines, err = _dump(capsys, str(path))

    assert (status, lines) == (1, [])
    assert "torn tail at byte 0: file ends inside the batch at base offset 0" in err


def test_misnamed_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "5-1.checkpoint"
    path.write_bytes(b"")

    status, _, err = _dump(capsys, str(path))

    assert status == 1
    assert "not a snapshot name" in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _dump(capsys, str(tmp_path / "nope.log"))

    assert status == 1
    assert "No such file or directory" in err


@pytest.mark.parametrize("argv", [[], ["records"]])
def test_a_group_without_a_command_prints_help(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert "usage: chunkraft" in capsys.readouterr().err


def test_console_script_runs_in_a_subprocess(tmp_path: Path) -> None:
    script = shutil.which("chunkraft", path=str(Path(sys.executable).parent))
    # scripts/bootstrap installs the package, so its console script must be beside python
    assert script is not None, "the chunkraft console script is not installed"
    path = tmp_path / "seg.log"
    records = _segment(path, 3, first_offset=0)

    done = subprocess.run(
        [script, "records", "dump", str(path)], capture_output=True, text=True, check=False
    )

    assert (done.returncode, done.stderr) == (0, "")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines == [
        {"offset": offset, **record_to_json(record)} for offset, record in enumerate(records)
    ]
