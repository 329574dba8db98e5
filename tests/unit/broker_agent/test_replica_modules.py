"""The ReplicaManager's split: the seams import one way, none imports the manager
back (not even for type checking), and each module stays well under 600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import chunkraft.broker_agent as package
from chunkraft.broker_agent.replica_host import ReplicaHost
from chunkraft.broker_agent.replica_manager import ReplicaManager

PACKAGE = Path(package.__file__).parent
SEAMS = ["produce_path", "fetch_path", "offsets_path", "chunk_roll", "chunk_replicas",
         "replica_roles", "isr_updates", "chunk_reports", "partition_registry", "replica_host",
         "background"]


def _imports(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("module", SEAMS)
def test_no_seam_imports_the_replica_manager(module: str) -> None:
    assert not any("replica_manager" in name for name in _imports(module)), module


@pytest.mark.parametrize("module", [*SEAMS, "replica_manager"])
def test_each_module_stays_well_under_600_lines(module: str) -> None:
    lines = len((PACKAGE / f"{module}.py").read_text().splitlines())
    assert lines < 450, f"{module}.py has {lines} lines"


def test_the_replica_manager_is_a_replica_host(tmp_path: Path) -> None:
    from chunkraft.broker_agent.replication_config import ReplicationConfig
    from chunkraft.broker_agent.storage import LogConfig, LogManager

    manager = ReplicaManager(1, LogManager(tmp_path, LogConfig()), ReplicationConfig(),
                             None, None, lambda: 7)  # type: ignore[arg-type]
    host: ReplicaHost = manager  # mypy checks the protocol; this checks the members exist
    assert host.node_id == 1 and host.broker_epoch() == 7 and host.partitions == {}
    assert host.image is manager.registry.image and host.config.min_insync_replicas == 1
