"""``chunkraft cluster``: a local quorum of controllers and broker agents on 127.0.0.1.

Everything lives under one directory (``--dir``): each node's formatted data dir, properties
file and log, each broker's log dir, properties file and log, and ``cluster.json`` with the
generated cluster id, Raft password and ports, so running the command again restarts the same
cluster with its data. Brokers (``--brokers``, 3 by default, ids 0 .. n-1) start once the quorum
is ready. Ctrl-C (or SIGTERM) stops every broker (a controlled shutdown) and then every node it
started. ``--demo`` walks through the KIP-1114 / KIP-195 / KIP-253 story against the quorum
first; ``--exit`` stops after the demo instead of serving until interrupted.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkraft.cli.errors import InputFileError, ToolError
from chunkraft.cli.input_files import read_input_json
from chunkraft.deploy.local_cluster import LocalCluster, write_private

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["open_local_cluster", "register"]

STATE_FILE = "cluster.json"


def register(commands: Subcommands) -> None:
    """Adds ``cluster``."""
    parser = commands.add_parser(
        "cluster", help="run a local quorum and brokers on 127.0.0.1 (Ctrl-C stops them)",
        description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--dir", type=Path, default=Path(".chunkraft/local-cluster"),
                        help="where the nodes keep their data and logs "
                             "(default: .chunkraft/local-cluster)")
    parser.add_argument("--controllers", type=int, choices=(1, 3, 5), default=3,
                        help="number of voters (default 3)")
    parser.add_argument("--brokers", type=int, choices=range(0, 10), default=3,
                        metavar="N", help="number of broker agents, ids 0 .. N-1 (default 3)")
    parser.add_argument("--demo", action="store_true", help="run the demo against the quorum")
    parser.add_argument("--exit", action="store_true",
                        help="stop the quorum after starting it (and after the demo)")
    parser.set_defaults(handler=_run)


def open_local_cluster(directory: Path, controllers: int, brokers: int = 3) -> LocalCluster:
    """The cluster kept under ``directory``: the same ids, password and ports as last time.

    A directory saved before brokers existed gets ``brokers`` new broker ports, saved from then
    on. InputFileError if its ``cluster.json`` cannot be read or is not what this command
    writes."""
    directory.mkdir(parents=True, exist_ok=True)
    state_path = directory / STATE_FILE
    if state_path.exists():
        state = read_input_json(state_path, "cluster state file")
        try:
            return _reopen(state_path, state, brokers)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            # a file edited by hand or by another version: say so, not a traceback
            raise InputFileError(f"cluster state file {state_path} is not one chunkraft "
                                 f"cluster wrote ({type(error).__name__}: {error}); fix it "
                                 "or use another --dir") from None
    cluster = LocalCluster(directory, size=controllers, broker_count=brokers)
    _save(state_path, cluster)
    return cluster


def _reopen(state_path: Path, state: Any, brokers: int) -> LocalCluster:
    """The cluster ``state`` (a saved ``cluster.json``) describes."""
    directory = state_path.parent
    saved_brokers: dict[str, int] = state.get("brokers", {})
    cluster = LocalCluster(directory, size=len(state["nodes"]),
                           cluster_id=state["cluster_id"], password=state["password"],
                           broker_count=len(saved_brokers) if saved_brokers else brokers)
    for node_id, (raft_port, http_port) in state["nodes"].items():
        node = cluster.nodes[int(node_id)]
        node.raft_port, node.http_port = raft_port, http_port
    for broker_id, port in saved_brokers.items():
        cluster.broker_nodes[int(broker_id)].http_port = port
    if not saved_brokers and cluster.broker_nodes:
        _save(state_path, cluster)
    return cluster


def _save(state_path: Path, cluster: LocalCluster) -> None:
    state = {"cluster_id": cluster.cluster_id, "password": cluster.password,
             "nodes": {str(n.node_id): [n.raft_port, n.http_port]
                       for n in cluster.nodes.values()},
             "brokers": {str(b.broker_id): b.http_port for b in cluster.broker_nodes.values()}}
    write_private(state_path, json.dumps(state, indent=2))  # it holds the Raft password


def _run(args: argparse.Namespace) -> int:
    try:
        cluster = open_local_cluster(args.dir, args.controllers, args.brokers)
    except ToolError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    cluster.prepare()
    cluster.start()
    try:
        started = time.monotonic()
        leader = cluster.wait_ready(timeout=60)
        print(f"chunkraft: {len(cluster.nodes)} controllers ready in "
              f"{time.monotonic() - started:.1f} s; cluster id {cluster.cluster_id}; "
              f"leader: controller {leader}")
        for node in cluster.nodes.values():
            print(f"  controller {node.node_id}: {node.url}  (Raft 127.0.0.1:{node.raft_port}, "
                  f"log {node.log_path})")
        bootstrap = ",".join(cluster.urls)
        print(f"  credentials: {cluster.credentials_path} (admin's command-config: "
              f"{cluster.command_config_path})")
        print(f"  try: chunkraft quorum describe --status --bootstrap-server {bootstrap} "
              f"--command-config {cluster.command_config_path}")
        if cluster.broker_nodes:
            started = time.monotonic()
            cluster.start_brokers()
            cluster.wait_brokers_ready(timeout=60)
            print(f"chunkraft: {len(cluster.broker_nodes)} brokers registered and unfenced in "
                  f"{time.monotonic() - started:.1f} s")
            for broker in cluster.broker_nodes.values():
                print(f"  broker {broker.broker_id}: {broker.url}  (logs {broker.log_dir}, "
                      f"config {broker.config_path}, log {broker.log_path})")
        if args.demo:
            from chunkraft.deploy.demo_story import run_demo

            run_demo(cluster)
        if not args.exit:
            print("serving; press Ctrl-C to stop every broker and controller")
            while not stop.wait(0.5):
                pass
    except KeyboardInterrupt:
        pass
    except (RuntimeError, TimeoutError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        if any(b.process is not None for b in cluster.broker_nodes.values()):
            print("stopping the brokers (controlled shutdown)...")
            cluster.stop_brokers(timeout=40)
        print("stopping the controllers...")
        cluster.stop()
    return 0
