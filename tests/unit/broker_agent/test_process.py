"""The broker process's wiring, without a network: every part built and connected."""

from __future__ import annotations

from pathlib import Path

from chunkraft.broker_agent.config import load_broker_config
from chunkraft.broker_agent.coordinator.groups.coordinator import group_coordinator_of
from chunkraft.broker_agent.coordinator.transactions import transaction_coordinator_of
from chunkraft.broker_agent.process import build_runtime, create_app, metadata_stats


def test_build_runtime_wires_every_part(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("crt_secret\n")
    properties = tmp_path / "broker.properties"
    properties.write_text(
        "node.id=4\ncontroller.quorum.bootstrap.servers=http://127.0.0.1:1,http://127.0.0.1:2\n"
        f"listeners=http://127.0.0.1:9192\nlog.dirs={tmp_path / 'logs'}\n"
        f"broker.token.file={token}\nsuper.users=User:admin\nbroker.rack=r2\n")
    runtime = build_runtime(load_broker_config(str(properties), {}, {}))
    assert runtime.node_id == 4 and runtime.cluster_id == ""
    assert runtime.controller.urls == ["http://127.0.0.1:1", "http://127.0.0.1:2"]
    assert runtime.controller.headers == {"authorization": "Bearer crt_secret"}
    # The ReplicaManager first: the transaction coordinator reads the leadership it applied.
    assert runtime.follower.listeners == [
        runtime.replica_manager, transaction_coordinator_of(runtime.replica_manager),
        group_coordinator_of(runtime.replica_manager)]
    assert type(runtime.replica_manager).__name__ == "ReplicaManager"
    assert runtime.producer_ids is not None and runtime.logs is not None
    assert runtime.lifecycle.listener.name == "HTTP" and runtime.lifecycle.rack == "r2"
    assert runtime.lifecycle.listener.port == 9192
    assert runtime.authorizer is not None and runtime.authorizer.super_users == {"User:admin"}
    app = create_app(runtime)
    paths = {getattr(route, "path", None) for route in app.routes}
    assert {"/broker/v1/status", "/broker/v1/metadata-stats", "/healthz"} <= paths
    stats = metadata_stats(runtime, samples=5)
    assert stats["metadata_offset"] == -1 and stats["broker_epoch"] == -1
    assert stats["latency"]["count"] == 0 and stats["batches"] == []
