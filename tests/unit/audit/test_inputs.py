"""AuditInputs.load: the manifests of an audit's inputs, checked against each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.audit.inputs import AuditInputError, AuditInputs
from chunkraft.export.directory import write_export
from chunkraft.export.manifest import ExportKind, Manifest
from chunkraft.export.tables import BROKER_STATE_TABLES, CONTROLLER_TABLES


def _export(path: Path, kind: ExportKind = ExportKind.CONTROLLER_SNAPSHOT, *,
            cluster: str = "c1", offset: int = 10, broker_id: int | None = None) -> Path:
    specs = CONTROLLER_TABLES if kind is ExportKind.CONTROLLER_SNAPSHOT else BROKER_STATE_TABLES
    manifest = Manifest(kind, cluster, offset, 1, 1_000, 0, "test", broker_id=broker_id)
    return write_export(path, manifest, {}, specs)


def test_loads_a_snapshot_a_previous_one_and_broker_states(tmp_path: Path) -> None:
    snapshot = _export(tmp_path / "now", offset=20)
    previous = _export(tmp_path / "before", offset=10)
    states = (_export(tmp_path / "b0", ExportKind.BROKER_STATE, broker_id=0),
              _export(tmp_path / "b1", ExportKind.BROKER_STATE, broker_id=1))
    inputs = AuditInputs.load(snapshot, previous, states)
    assert inputs.snapshot.manifest.offset == 20
    assert inputs.previous is not None and inputs.previous.manifest.offset == 10
    assert [s.manifest.broker_id for s in inputs.broker_states] == [0, 1]
    assert inputs.snapshot.table_path("chunks") == snapshot / "chunks"


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(AuditInputError, match=r"--snapshot .*no such directory"):
        AuditInputs.load(tmp_path / "nowhere")


def test_a_directory_without_manifest_is_not_an_export(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()
    with pytest.raises(AuditInputError, match="not a complete export"):
        AuditInputs.load(tmp_path / "half")


def test_kinds_must_match_their_flags(tmp_path: Path) -> None:
    state = _export(tmp_path / "b0", ExportKind.BROKER_STATE, broker_id=0)
    snapshot = _export(tmp_path / "now")
    with pytest.raises(AuditInputError, match="broker-state export, not a controller-snapshot"):
        AuditInputs.load(state)
    with pytest.raises(AuditInputError, match="controller-snapshot export, not a broker-state"):
        AuditInputs.load(snapshot, broker_states=(snapshot,))


def test_every_input_must_be_of_the_snapshot_cluster(tmp_path: Path) -> None:
    snapshot = _export(tmp_path / "now")
    other = _export(tmp_path / "other", ExportKind.BROKER_STATE, cluster="c2", broker_id=0)
    with pytest.raises(AuditInputError, match="of cluster c2, the snapshot of c1"):
        AuditInputs.load(snapshot, broker_states=(other,))


def test_the_previous_snapshot_cannot_be_newer(tmp_path: Path) -> None:
    snapshot = _export(tmp_path / "now", offset=5)
    later = _export(tmp_path / "later", offset=9)
    with pytest.raises(AuditInputError, match="offset 9, after the audited snapshot's 5"):
        AuditInputs.load(snapshot, later)


def test_one_state_per_broker(tmp_path: Path) -> None:
    snapshot = _export(tmp_path / "now")
    first = _export(tmp_path / "b0", ExportKind.BROKER_STATE, broker_id=0)
    again = _export(tmp_path / "b0-again", ExportKind.BROKER_STATE, broker_id=0)
    with pytest.raises(AuditInputError, match="both the state of broker 0"):
        AuditInputs.load(snapshot, broker_states=(first, again))


def test_inputs_are_verified_and_their_notices_kept(tmp_path: Path) -> None:
    snapshot = _export(tmp_path / "now")
    state = _export(tmp_path / "b0", ExportKind.BROKER_STATE, broker_id=0)
    stray = state / "local_logs" / "part-00042.parquet"
    stray.write_bytes((state / "local_logs" / "part-00000.parquet").read_bytes())
    inputs = AuditInputs.load(snapshot, broker_states=(state,))
    assert inputs.snapshot.verified is not None and inputs.snapshot.verified.checksummed
    assert inputs.snapshot.rows() == {spec.name: 0 for spec in CONTROLLER_TABLES}
    assert inputs.notices == [f"{stray}: in table directory local_logs/ but not listed in the "
                              "manifest; ignored"]
    assert inputs.broker_states[0].table_files("local_logs") == [
        state / "local_logs" / "part-00000.parquet"]
    (snapshot / "topics" / "part-00000.parquet").unlink()
    with pytest.raises(AuditInputError, match=r"^--snapshot: .*topics/part-00000.parquet: "
                                               r"listed in the manifest but missing$"):
        AuditInputs.load(snapshot)


def test_with_a_key_every_manifest_must_be_signed_with_it(tmp_path: Path) -> None:
    key = b"k" * 32
    manifest = Manifest(ExportKind.CONTROLLER_SNAPSHOT, "c1", 10, 1, 1_000, 0, "test")
    signed = write_export(tmp_path / "signed", manifest, {}, CONTROLLER_TABLES, signing_key=key)
    unsigned = _export(tmp_path / "unsigned")
    assert AuditInputs.load(signed, key=key).snapshot.manifest.signature is not None
    with pytest.raises(AuditInputError, match=r"--snapshot .*unsigned: manifest.json: the "
                                               r"manifest is not signed"):
        AuditInputs.load(unsigned, key=key)
    with pytest.raises(AuditInputError, match="does not match the key"):
        AuditInputs.load(signed, key=b"x" * 32)
