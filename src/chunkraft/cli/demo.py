"""``chunkraft demo``: a local cluster and KIP-1114's test plan with the real clients.

Starts 3 controllers and broker agents 0, 1 and 2 on 127.0.0.1, as ``chunkraft cluster`` does
(the same ``--dir``, default ``.chunkraft/local-cluster``, so a second run restarts the same
cluster with its data), then runs KIP-1114's CreateChunkTest (plain and transactional) and
AlterChunkAssignmentsTest step by step with the Producer and the Consumer, printing which
broker served each poll's records (:mod:`chunkraft.local.client_demo`). It then serves until
Ctrl-C, or stops at once with ``--exit``; either way every broker (a controlled shutdown) and
controller it started is stopped. ``chunkraft cluster --demo`` still tells the metadata story
(registrations, KIP-195 / KIP-253 expansion, a chunk cut and move, a controller failover).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from chunkraft.cli.errors import ToolError
from chunkraft.cli.stop_signals import Stopper, StopRequested
from chunkraft.local.local_cluster import LocalCluster

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["BROKERS", "CONTROLLERS", "boot", "open_cluster", "register", "stop_cluster"]

CONTROLLERS = 3
BROKERS = 3
READY_S = 60.0


def register(commands: Subcommands) -> None:
    """Adds ``chunkraft demo``."""
    parser = commands.add_parser(
        "demo", help="start a local cluster and run KIP-1114's test plan with the real "
                     "producer and consumer",
        description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--dir", type=Path, default=Path(".chunkraft/local-cluster"),
                        help="where the cluster keeps its data and logs "
                             "(default: .chunkraft/local-cluster, as chunkraft cluster)")
    parser.add_argument("--exit", action="store_true",
                        help="stop the cluster after the demo instead of serving")
    parser.set_defaults(handler=_run)


def open_cluster(directory: Path) -> LocalCluster:
    """The cluster kept under ``directory`` (made on first use), prepared: formatted, with
    credentials and every node's properties file; nothing started yet."""
    from chunkraft.cli.cluster import open_local_cluster

    cluster = open_local_cluster(directory, CONTROLLERS, BROKERS)
    if sorted(cluster.broker_nodes) != list(range(BROKERS)):
        raise RuntimeError(f"{directory} holds a cluster with brokers "
                           f"{sorted(cluster.broker_nodes)}; the demo needs exactly "
                           f"0..{BROKERS - 1}: use another --dir")
    cluster.prepare()
    return cluster


def boot(cluster: LocalCluster, out: TextIO) -> None:
    """Starts the prepared ``cluster``: controllers, then brokers; returns once every broker
    is registered and unfenced, having printed where everything listens. The caller stops it
    (:func:`stop_cluster`) whatever happens, even if this raises."""
    started = time.monotonic()
    cluster.start()
    leader = cluster.wait_ready(timeout=READY_S)
    print(f"chunkraft: {len(cluster.nodes)} controllers ready in "
          f"{time.monotonic() - started:.1f} s; cluster id {cluster.cluster_id}; "
          f"leader: controller {leader}", file=out)
    for node in cluster.nodes.values():
        print(f"  controller {node.node_id}: {node.url}", file=out)
    started = time.monotonic()
    cluster.start_brokers()
    cluster.wait_brokers_ready(timeout=READY_S)
    print(f"chunkraft: {len(cluster.broker_nodes)} brokers registered and unfenced in "
          f"{time.monotonic() - started:.1f} s", file=out)
    for broker in cluster.broker_nodes.values():
        print(f"  broker {broker.broker_id}: {broker.url}  (log {broker.log_path})", file=out)
    print(f"  credentials (admin's command-config): {cluster.command_config_path}", file=out)
    if cluster.kafka_bootstrap_servers:
        print(f"  Kafka bootstrap servers ({cluster.kafka_protocol}): "
              f"{cluster.kafka_bootstrap_servers}", file=out)
        print(f"  Kafka bootstrap controllers ({cluster.kafka_protocol}): "
              f"{cluster.kafka_bootstrap_controllers}", file=out)
        print(f"  Kafka client settings (librdkafka's names): "
              f"{cluster.kafka_client_properties_path}", file=out)
    print(cluster.console_hint(), file=out)


def stop_cluster(cluster: LocalCluster, out: TextIO) -> None:
    """Stops the brokers (a controlled shutdown) and then the controllers this process
    started; SIGKILL, by PID, for any that does not stop."""
    try:
        if any(b.process is not None for b in cluster.broker_nodes.values()):
            print("stopping the brokers (controlled shutdown)...", file=out)
            cluster.stop_brokers(timeout=40)
    finally:
        print("stopping the controllers...", file=out, flush=True)
        cluster.stop()


def _hints(cluster: LocalCluster, topic: str, out: TextIO) -> None:
    brokers = ",".join(cluster.broker_url(b) for b in sorted(cluster.broker_nodes))
    controllers = ",".join(cluster.urls)
    config = cluster.command_config_path
    print("\ntry, while it serves:", file=out)
    print(f"  echo hello | chunkraft produce --bootstrap-server {brokers} "
          f"--command-config {config} --topic {topic}", file=out)
    print(f"  chunkraft consume --bootstrap-server {brokers} --command-config {config} "
          f"--topic {topic} --from-beginning --timeout-ms 5000 "
          f"--property print.offset=true print.broker=true", file=out)
    print(f"  chunkraft topics --bootstrap-server {controllers} --command-config {config} "
          f"--describe", file=out)
    if cluster.kafka_bootstrap_servers:
        print(f"  kcat -F {cluster.kafka_client_properties_path} -b "
              f"{cluster.kafka_bootstrap_servers} -L", file=out)


def _run(args: argparse.Namespace) -> int:
    from chunkraft.local.client_demo import DemoError, run_client_demo

    out = sys.stdout
    # SIGINT (Ctrl-C, also for a background job, which starts with SIGINT ignored) and SIGTERM
    # stop every broker and controller this command started, whenever they come.
    stopper = Stopper()
    stopper.install()
    try:
        cluster = open_cluster(args.dir)
    except (RuntimeError, OSError, ValueError, ToolError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    status = 0
    try:
        try:
            with stopper.deferred():  # never between a node's fork and its Popen
                boot(cluster, out)
            topic = run_client_demo(cluster, out)
            if not args.exit:
                _hints(cluster, topic, out)
                print("serving; press Ctrl-C (or send SIGTERM) to stop every broker and "
                      "controller", file=out, flush=True)
                while True:
                    time.sleep(0.5)  # until a signal raises StopRequested
        except StopRequested:
            pass
        except (DemoError, RuntimeError, TimeoutError) as error:
            print(f"error: {error}", file=sys.stderr)
            status = 1
        finally:
            stopper.shield()
            stop_cluster(cluster, out)
    except StopRequested:  # it came just as the block above ended, before shield()
        stop_cluster(cluster, out)
    return status
