"""What an audit reads and how it is tuned: input directories (checked) and settings.

Both engines take an :class:`AuditInputs` (the manifests already read and checked against each
other) and :class:`AuditSettings`; a problem with the inputs raises :class:`AuditInputError`,
which the job turns into exit code 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chunkraft.errors import ChunkraftError
from chunkraft.export.manifest import ExportError, ExportKind, Manifest

__all__ = ["AuditInputError", "AuditInputs", "AuditSettings", "ExportInput"]


class AuditInputError(ChunkraftError):
    """An input directory is missing, incomplete, of the wrong kind or of another cluster."""


@dataclass(frozen=True)
class ExportInput:
    """One export directory and its manifest."""

    path: Path
    manifest: Manifest

    def table_path(self, table: str) -> Path:
        """The directory holding ``table``'s Parquet files."""
        return self.path / table


@dataclass(frozen=True)
class AuditInputs:
    """The snapshot to audit, optionally an earlier one, and brokers' state exports."""

    snapshot: ExportInput
    previous: ExportInput | None = None
    broker_states: tuple[ExportInput, ...] = ()

    @staticmethod
    def load(snapshot: str | Path, previous: str | Path | None = None,
             broker_states: tuple[str | Path, ...] = ()) -> AuditInputs:
        """Reads and cross-checks the manifests: the right kinds, one cluster, the previous
        snapshot not newer than the audited one, one state per broker."""
        current = _read(snapshot, ExportKind.CONTROLLER_SNAPSHOT, "--snapshot")
        earlier = (None if previous is None
                   else _read(previous, ExportKind.CONTROLLER_SNAPSHOT, "--previous"))
        states = tuple(_read(p, ExportKind.BROKER_STATE, "--brokers-state")
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
        return AuditInputs(current, earlier, states)


def _read(path: str | Path, kind: ExportKind, option: str) -> ExportInput:
    directory = Path(path)
    if not directory.is_dir():
        raise AuditInputError(f"{option} {directory}: no such directory")
    try:
        manifest = Manifest.read(directory)
    except ExportError as error:
        raise AuditInputError(f"{option} {directory}: {error}") from error
    if manifest.kind is not kind:
        raise AuditInputError(
            f"{option} {directory} is a {manifest.kind.value} export, not a {kind.value}")
    return ExportInput(directory, manifest)


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
