"""``chunkraft cluster``: a local quorum of controllers and broker agents on 127.0.0.1.

Everything lives under one directory (``--dir``): each node's formatted data dir, properties
file and log, each broker's log dir, properties file and log, and ``cluster.json`` with the
generated cluster id, Raft password and ports, so running the command again restarts the same
cluster with its data. Brokers (``--brokers``, 3 by default, ids 0 .. n-1) start once the quorum
is ready. ``--demo`` walks through the KIP-1114 / KIP-195 / KIP-253 story against the quorum
first; ``--exit`` stops after the demo instead of serving until interrupted.

While it serves it looks for dead nodes every 0.5 s: each is reaped (no zombie) and reported on
stderr with its PID, its exit status or signal and its log file; it is restarted only with
``--restart-dead`` (not if it died within 10 s of its last start), else the report gives the
command that restarts it by hand, appending to the same log.
SIGINT (Ctrl-C, and also in a background job, where the shell had it ignored) and SIGTERM stop
every broker (a controlled shutdown) and then every controller it started, by PID, and exit 0.
While it serves, its PID is in ``<dir>/cluster.pid`` and SIGUSR1 makes it restart every node
one at a time (a rolling restart, :mod:`chunkraft.cli.cluster_roll`); ``--rolling-restart``
asks the command serving from ``--dir`` for one and follows it to its end.
``--controller-override`` / ``--broker-override [ID:]KEY=VALUE`` put settings into every node's
properties file, or one node's, checked by the loaders before anything starts
(:mod:`chunkraft.local.node_settings`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkraft.cli.cluster_roll import RollService, follow_rolling_restart, serving_pid
from chunkraft.cli.errors import InputFileError, ToolError
from chunkraft.cli.input_files import read_input_json
from chunkraft.cli.stop_signals import Stopper, StopRequested
from chunkraft.errors import ConfigError
from chunkraft.local.local_cluster import LocalCluster, write_private
from chunkraft.local.node_settings import NodeOverride, check_overrides, parse_override
from chunkraft.local.node_watch import NodeExit, reap_exited

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = [
    "STATE_FILE",
    "Restarter",
    "StopRequested",
    "open_local_cluster",
    "register",
    "report_dead",
]

STATE_FILE = "cluster.json"
WATCH_INTERVAL = 0.5
"""Seconds between two looks for dead nodes while the cluster serves."""
RESTART_MIN_UPTIME = 10.0
"""``--restart-dead`` leaves stopped a node that died sooner than this after its last start."""
ROLL_FOLLOW_TIMEOUT = 1800.0
"""``--rolling-restart`` gives up following the roll after this long by default."""


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
    parser.add_argument("--restart-dead", action="store_true",
                        help="start again a node that dies, appending to its log (not one "
                             f"that died within {RESTART_MIN_UPTIME:g} s of its last start); "
                             "without it a dead node is only reported")
    parser.add_argument("--controller-override", metavar="[ID:]KEY=VALUE", type=_override,
                        action="append", default=[],
                        help="a property of every controller's file, or of controller ID's "
                             "only (repeatable; docs/operations.md lists them)")
    parser.add_argument("--broker-override", metavar="[ID:]KEY=VALUE", type=_override,
                        action="append", default=[],
                        help="a property of every broker's file, or of broker ID's only "
                             "(repeatable; docs/broker.md lists them)")
    parser.add_argument("--rolling-restart", action="store_true",
                        help="restart every node of the cluster serving from --dir, one at a "
                             "time (brokers, then controllers, the leader last), and follow "
                             "the roll: exit 0 once it succeeded, 1 with its error")
    parser.add_argument("--timeout", type=float, default=ROLL_FOLLOW_TIMEOUT, metavar="SECONDS",
                        help="with --rolling-restart: stop following after this long "
                             f"(default {ROLL_FOLLOW_TIMEOUT:g}; the roll goes on)")
    parser.set_defaults(handler=_run)


def _override(text: str) -> NodeOverride:
    try:
        return parse_override(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


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
    kafka_ports = state.get("kafka_ports")
    if kafka_ports:
        # Only the nodes the file names elsewhere: others get their own ports.
        for node_id, port in kafka_ports.get("controllers", {}).items():
            if int(node_id) in cluster.nodes:
                cluster.nodes[int(node_id)].kafka_port = port
        for broker_id, port in kafka_ports.get("brokers", {}).items():
            if int(broker_id) in cluster.broker_nodes:
                cluster.broker_nodes[int(broker_id)].kafka_port = port
    if (not saved_brokers and cluster.broker_nodes) or not kafka_ports:
        _save(state_path, cluster)  # ports first given by this version are kept from now on
    return cluster


def _save(state_path: Path, cluster: LocalCluster) -> None:
    state = {"cluster_id": cluster.cluster_id, "password": cluster.password,
             "nodes": {str(n.node_id): [n.raft_port, n.http_port]
                       for n in cluster.nodes.values()},
             "brokers": {str(b.broker_id): b.http_port for b in cluster.broker_nodes.values()},
             "kafka_ports": {
                 "controllers": {str(n.node_id): n.kafka_port for n in cluster.nodes.values()},
                 "brokers": {str(b.broker_id): b.kafka_port
                             for b in cluster.broker_nodes.values()}},
             # Kafka's forms, for stock clients: bootstrap.servers / bootstrap.controllers.
             "kafka_bootstrap_servers": cluster.kafka_bootstrap_servers,
             "kafka_bootstrap_controllers": cluster.kafka_bootstrap_controllers}
    write_private(state_path, json.dumps(state, indent=2))  # it holds the Raft password


def _apply_overrides(cluster: LocalCluster, args: argparse.Namespace) -> None:
    """The overrides of ``args`` checked (ConfigError) and set on ``cluster``'s properties."""
    controllers = check_overrides("controller", args.controller_override, cluster.nodes)
    brokers = check_overrides("broker", args.broker_override, cluster.broker_nodes)
    cluster.extra_properties.update(controllers.every)
    cluster.node_properties.update(controllers.per_node)
    cluster.broker_properties.update(brokers.every)
    cluster.broker_node_properties.update(brokers.per_node)


def _check_node_configs(cluster: LocalCluster) -> None:
    """Loads every prepared properties file as the node will (the same environment), so a
    setting refused together with the others (election timeouts, minimums) is refused before
    any node starts; ConfigError."""
    from chunkraft.broker_agent.config import load_broker_config
    from chunkraft.controller.config import load_controller_config

    for node in cluster.nodes.values():
        load_controller_config(str(node.config_path), {}, os.environ)
    for broker in cluster.broker_nodes.values():
        load_broker_config(str(broker.config_path), {}, os.environ)


def _run(args: argparse.Namespace) -> int:
    if args.rolling_restart:
        return follow_rolling_restart(args.dir, args.timeout)
    serving = serving_pid(args.dir)
    if serving is not None:
        print(f"error: a chunkraft cluster already serves from {args.dir} (pid {serving}); "
              "stop it first, or ask it for a rolling restart with --rolling-restart",
              file=sys.stderr)
        return 1
    try:
        cluster = open_local_cluster(args.dir, args.controllers, args.brokers)
        _apply_overrides(cluster, args)
    except (ToolError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    stopper = Stopper()
    stopper.install()
    status = 0
    try:
        try:
            status = _serve(cluster, args, stopper)
        finally:
            stopper.shield()
            _stop_all(cluster)
    except StopRequested:  # the signal came just as the block above ended, before shield()
        _stop_all(cluster)
    return status


def _serve(cluster: LocalCluster, args: argparse.Namespace, stopper: Stopper) -> int:
    """Starts the cluster and serves until a signal (0) or an error (1); the caller stops
    whatever was started."""
    try:
        cluster.prepare()
        _check_node_configs(cluster)
        with stopper.deferred():
            cluster.start()
        started = time.monotonic()
        leader = cluster.wait_ready(timeout=60)
        print(f"chunkraft: {len(cluster.nodes)} controllers ready in "
              f"{time.monotonic() - started:.1f} s; cluster id {cluster.cluster_id}; "
              f"leader: controller {leader}")
        for node in cluster.nodes.values():
            print(f"  controller {node.node_id}: {node.url}  (pid {_pid(node.process)}, "
                  f"Raft 127.0.0.1:{node.raft_port}, log {node.log_path})")
        bootstrap = ",".join(cluster.urls)
        print(f"  credentials: {cluster.credentials_path} (admin's command-config: "
              f"{cluster.command_config_path})")
        if cluster.kafka_bootstrap_controllers:
            print(f"  Kafka bootstrap controllers ({cluster.kafka_protocol}): "
                  f"{cluster.kafka_bootstrap_controllers}")
        print(f"  try: chunkraft quorum describe --status --bootstrap-server {bootstrap} "
              f"--command-config {cluster.command_config_path}")
        print(cluster.console_hint())
        if cluster.broker_nodes:
            started = time.monotonic()
            cluster.grant_broker_acls()
            for broker_id in cluster.broker_nodes:
                with stopper.deferred():
                    cluster.start_broker(broker_id)
            cluster.wait_brokers_ready(timeout=60)
            print(f"chunkraft: {len(cluster.broker_nodes)} brokers registered and unfenced in "
                  f"{time.monotonic() - started:.1f} s")
            for broker in cluster.broker_nodes.values():
                print(f"  broker {broker.broker_id}: {broker.url}  (pid {_pid(broker.process)}, "
                      f"logs {broker.log_dir}, config {broker.config_path}, "
                      f"log {broker.log_path})")
            if cluster.kafka_bootstrap_servers:
                print(f"  Kafka bootstrap servers ({cluster.kafka_protocol}): "
                      f"{cluster.kafka_bootstrap_servers}")
                print(f"  try: kcat -F {cluster.kafka_client_properties_path} -b "
                      f"{cluster.kafka_bootstrap_servers} -L")
        if args.demo:
            from chunkraft.local.demo_story import run_demo

            run_demo(cluster)
        if not args.exit:
            rolls = RollService(cluster, args.dir, stopper.deferred)
            with rolls.serving():
                print("serving; Ctrl-C or SIGTERM stops every broker, then every controller; "
                      f"SIGUSR1 (or chunkraft cluster --dir {args.dir} --rolling-restart) "
                      "restarts them one at a time", flush=True)
                _watch(cluster, stopper, Restarter(cluster) if args.restart_dead else None,
                       rolls)
    except StopRequested:
        return 0
    except (RuntimeError, TimeoutError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _pid(process: subprocess.Popen[bytes] | None) -> str:
    return str(process.pid) if process is not None else "-"


def _watch(cluster: LocalCluster, stopper: Stopper, restarter: Restarter | None,
           rolls: RollService) -> None:
    """Reports the nodes that die (:func:`report_dead`) every ``WATCH_INTERVAL`` seconds, and
    runs the rolling restarts SIGUSR1 asks for, until a signal raises StopRequested. A roll runs
    here, in between: the nodes it stops are never taken for dead ones."""
    while True:
        with stopper.deferred():  # a restart's fork must not be cut in half
            report_dead(cluster, restarter)
        rolls.run_requested()  # its starts are deferred-safe too (its guard)
        time.sleep(WATCH_INTERVAL)


class Restarter:
    """``--restart-dead``: starts a dead node again (its log appended to), unless it died less
    than ``min_uptime`` seconds after its last start: a node that fails at once (a bad
    setting, a full disk, a port taken) would otherwise restart in a loop every half second and
    bury its first error deep in its log; it is left stopped, and said so. Not thread-safe."""

    def __init__(self, cluster: LocalCluster, min_uptime: float = RESTART_MIN_UPTIME,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cluster = cluster
        self.min_uptime = min_uptime
        self.clock = clock
        self._since = clock()  # every node started before serving began
        self._last_start: dict[tuple[str, int], float] = {}

    def restart(self, dead: NodeExit) -> str:
        """Starts ``dead``'s node again, or not; the line that says which."""
        now = self.clock()
        up = now - self._last_start.get((dead.kind, dead.node_id), self._since)
        if up < self.min_uptime:
            return (f"{dead.name} died {up:.1f} s after it started, sooner than "
                    f"{self.min_uptime:g} s: not restarted again (see its log; restart it "
                    f"by hand: {_restart_command(self.cluster, dead)})")
        if dead.kind == "broker":
            self.cluster.start_broker(dead.node_id)
            process = self.cluster.broker_nodes[dead.node_id].process
        else:
            self.cluster.start(dead.node_id)
            process = self.cluster.nodes[dead.node_id].process
        self._last_start[(dead.kind, dead.node_id)] = now
        pid = process.pid if process is not None else "-"
        return f"{dead.name} restarted (--restart-dead) as pid {pid}; its log: {dead.log_path}"


def report_dead(cluster: LocalCluster, restarter: Restarter | None = None) -> list[NodeExit]:
    """One look for nodes of ``cluster`` that died: each is reaped (no zombie) and named on
    stderr with its PID, how it ended and its log; then restarted by ``restarter``, or, without
    one, named with the command that restarts it by hand.

    Without ``--restart-dead`` a node is not restarted: which node died, and why, is the
    operator's to judge first (its log says); the report says how."""
    dead_nodes = reap_exited(cluster)
    for dead in dead_nodes:
        print(f"chunkraft: {dead.describe()}", file=sys.stderr)
        if restarter is not None:
            line = restarter.restart(dead)
        else:
            line = (f"{dead.name} is not restarted; to restart it by hand, writing to the "
                    f"same log: {_restart_command(cluster, dead)}")
        print(f"chunkraft: {line}", file=sys.stderr, flush=True)
    return dead_nodes


def _restart_command(cluster: LocalCluster, dead: NodeExit) -> str:
    if dead.kind == "broker":
        config = cluster.broker_nodes[dead.node_id].config_path
    else:
        config = cluster.nodes[dead.node_id].config_path
    return f"chunkraft {dead.kind} --config {config} >> {dead.log_path} 2>&1 &"


def _stop_all(cluster: LocalCluster) -> None:
    """Every broker this command started (a controlled shutdown: the quorum must still run),
    then every controller; only the PIDs it started, those that died already are reaped."""
    for dead in reap_exited(cluster):
        print(f"chunkraft: {dead.describe()}", file=sys.stderr)
    if any(b.process is not None for b in cluster.broker_nodes.values()):
        print("stopping the brokers (controlled shutdown)...", flush=True)
        cluster.stop_brokers(timeout=40)
    if any(n.process is not None for n in cluster.nodes.values()):
        print("stopping the controllers...", flush=True)
        cluster.stop()
