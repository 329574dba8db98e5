"""The optional HMAC-SHA256 signature of manifest.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkraft.export.directory import write_export
from chunkraft.export.manifest import MANIFEST_NAME, ExportError, ExportKind, Manifest
from chunkraft.export.signature import SignatureError, check_signature, read_key
from chunkraft.export.tables import CONTROLLER_TABLES

KEY = b"0123456789abcdef-operator-key"


def _export(path: Path, key: bytes | None) -> Manifest:
    write_export(path, Manifest(ExportKind.CONTROLLER_SNAPSHOT, "c", 1, 0, 0, 0, "test"), {},
                 CONTROLLER_TABLES, signing_key=key)
    return Manifest.read(path)


def test_a_signed_manifest_verifies_only_with_its_key(tmp_path: Path) -> None:
    manifest = _export(tmp_path / "x", KEY)
    assert manifest.signature is not None and manifest.signature["algorithm"] == "hmac-sha256"
    check_signature(manifest, KEY, "m")
    with pytest.raises(SignatureError, match="does not match the key"):
        check_signature(manifest, KEY + b"!", "m")


def test_a_changed_manifest_or_an_unsigned_one_is_refused(tmp_path: Path) -> None:
    signed = tmp_path / "x"
    _export(signed, KEY)
    value = json.loads((signed / MANIFEST_NAME).read_text())
    value["tables"]["chunks"]["files"][0]["sha256"] = "0" * 64
    (signed / MANIFEST_NAME).write_text(json.dumps(value))
    with pytest.raises(SignatureError, match="does not match the key"):
        check_signature(Manifest.read(signed), KEY, "m")
    with pytest.raises(SignatureError, match="not signed"):
        check_signature(_export(tmp_path / "y", None), KEY, "m")


def test_keys_are_read_from_files_and_must_be_long_enough(tmp_path: Path) -> None:
    (tmp_path / "k").write_bytes(KEY + b"\n")
    assert read_key(tmp_path / "k") == KEY
    (tmp_path / "short").write_bytes(b"abc\n")
    with pytest.raises(ExportError, match="3 bytes; at least 16"):
        read_key(tmp_path / "short")
    with pytest.raises(ExportError, match="cannot read the signing key"):
        read_key(tmp_path / "absent")
