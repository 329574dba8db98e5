"""What an audit reads and how it is tuned: input directories (checked) and settings.

Both engines take an :class:`AuditInputs` (the manifests already read and checked against each
other, every listed file verified against its manifest: :mod:`chunkraft.export.verify`) and
:class:`AuditSettings`; a problem with the inputs raises :class:`AuditInputError`, which the
job turns into exit code 2. The engines read exactly the files the manifests list.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from chunkraft.errors import ChunkraftError
from chunkraft.export.manifest import MANIFEST_NAME, ExportError, ExportKind, Manifest
from chunkraft.export.signature import check_signature
from chunkraft.export.verify import VerifiedExport, verify_export

__all__ = ["AuditInputError", "AuditInputs", "AuditSettings", "ExportInput"]


class AuditInputError(ChunkraftError):
    """An input directory is missing, incomplete, of the wrong kind or of another cluster."""


@dataclass(frozen=True)
class ExportInput:
    """One export directory, its manifest and what verifying its files found (None when the
    input was not verified: tests that build one by hand)."""

    path: Path
    manifest: Manifest
    verified: VerifiedExport | None = None

    def table_path(self, table: str) -> Path:
        """The directory holding ``table``'s Parquet files."""
        return self.path / table

    def table_files(self, table: str) -> list[Path]:
        """The files of ``table`` the manifest lists, in its order (none if the table is not
        in the manifest): the only files an engine reads."""
        entry = self.manifest.tables.get(table)
        return [] if entry is None else [self.path / f for f in entry.files]

    def rows(self) -> dict[str, int]:
        """Rows per table: counted in the listed files when verified, else the manifest's."""
        if self.verified is not None:
            return dict(sorted(self.verified.rows.items()))
        return {name: t.rows for name, t in sorted(self.manifest.tables.items())}


@dataclass(frozen=True)
class AuditInputs:
    """The snapshot to audit, optionally an earlier one, and brokers' state exports."""

    snapshot: ExportInput
    previous: ExportInput | None = None
    broker_states: tuple[ExportInput, ...] = ()
    verify_seconds: float = field(default=0.0, compare=False)

    @property
    def notices(self) -> list[str]:
        """What verifying the inputs found that is not an error (unlisted files ignored,
        manifests without checksums), in input order."""
        exports = [self.snapshot, *([self.previous] if self.previous else []),
                   *self.broker_states]
        return [n for e in exports if e.verified is not None for n in e.verified.notices]

    @staticmethod
    def load(snapshot: str | Path, previous: str | Path | None = None,
             broker_states: tuple[str | Path, ...] = (), *, key: bytes | None = None,
             checksums: bool = True) -> AuditInputs:
        """Reads, verifies and cross-checks the manifests: each input's listed files as its
        manifest records them (``checksums=False`` skips only the SHA-256 comparison), its
        signature when a ``key`` is given, the right kinds, one cluster, the previous
        snapshot not newer than the audited one, one state per broker."""
        began = time.perf_counter()
        current = _read(snapshot, ExportKind.CONTROLLER_SNAPSHOT, "--snapshot", key, checksums)
        earlier = (None if previous is None
                   else _read(previous, ExportKind.CONTROLLER_SNAPSHOT, "--previous", key,
                              checksums))
        states = tuple(_read(p, ExportKind.BROKER_STATE, "--brokers-state", key, checksums)
                       for p in broker_states)
        cluster = current.manifest.cluster_id
        for other in ([earlier] if earlier else []) + list(states):
            if other.manifest.cluster_id != cluster:
                raise AuditInputError(
                    f"{other.path} is of cluster {other.manifest.cluster_id}, the snapshot of "
                    f"{cluster}")
        if earlier is not None and earlier.manifest.offset > current.manifest.offset:
            raise AuditInputError(
                f"--previous {earlier.path} is at offset {earlier.manifest.offset}, after the "
                f"audited snapshot's {current.manifest.offset}")
        seen: dict[int | None, Path] = {}
        for state in states:
            if state.manifest.broker_id in seen:
                raise AuditInputError(
                    f"{state.path} and {seen[state.manifest.broker_id]} are both the state of "
                    f"broker {state.manifest.broker_id}")
            seen[state.manifest.broker_id] = state.path
        return AuditInputs(current, earlier, states, time.perf_counter() - began)


def _read(path: str | Path, kind: ExportKind, option: str, key: bytes | None,
          checksums: bool) -> ExportInput:
    directory = Path(path)
    if not directory.is_dir():
        raise AuditInputError(f"{option} {directory}: no such directory")
    try:
        manifest = Manifest.read(directory)
        if key is not None:
            check_signature(manifest, key, MANIFEST_NAME)
    except ExportError as error:
        raise AuditInputError(f"{option} {directory}: {error}") from error
    if manifest.kind is not kind:
        raise AuditInputError(
            f"{option} {directory} is a {manifest.kind.value} export, not a {kind.value}")
    try:
        verified = verify_export(directory, manifest, checksums=checksums)
    except ExportError as error:
        raise AuditInputError(f"{option}: {error}") from error
    return ExportInput(directory, manifest, verified)


@dataclass(frozen=True)
class AuditSettings:
    """Thresholds and bounds of an audit (the job's flags; defaults are the documented ones)."""

    sample_size: int = 20                 # offending rows kept per rule
    fenced_threshold_ms: int = 10 * 60_000   # replicas.fenced_broker
    stuck_move_threshold_ms: int = 30 * 60_000  # replicas.stuck_move
    max_skew: float = 2.0                 # load.skew: max / mean chunk replicas per broker
    min_mean_for_skew: float = 10.0       # load.skew applies from this mean on
    hottest: int = 10                     # partitions in LoadSummary.hottest
    timelines: int = 8                    # partitions drawn as timelines
    timeline_chunks: int = 40             # newest chunks per drawn timeline
    diff_sample_size: int = 20            # rows kept per kind of change in the diff
