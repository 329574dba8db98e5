"""A cluster on seven hosts of its own: 3 controller hosts, 3 broker hosts and a
client host, each a network namespace with its own address (chunkraft.chaos.netns.Hosts).

Every node runs from the properties file an operator would write on that host
(chunkraft.deploy.host_config: listeners, Raft port and voters on the hosts' addresses, never
0.0.0.0 or 127.0.0.1), started as its own process inside its namespace with exactly
``chunkraft controller --config FILE`` (after ``chunkraft controller format``) or ``chunkraft
broker --config FILE``. The test process has no route to the hosts: it looks and acts through
processes on the client host, as an operator's machine would. Checked: the quorum forms (one
leader, all three ready), the three brokers register with their host addresses and are
unfenced, KIP-1114's demo story runs from the client host, and with one controller host's link
down (the leader's) the majority still commits a topic created from the client host, and the
cut host rejoins (ready, following the leader, on the same image) once its link is back, with
the brokers still unfenced. Then a controller host dies for good and an eighth host, with a new
address, replaces it as controller 4 (``chunkraft quorum remove-controller``, then a data dir
formatted with ``--no-initial-controllers`` and ``add-controller``, all from the client host):
the two survivors keep their majority throughout, the new controller catches up on their image,
and a topic created afterwards reaches all three. The timings of each phase are printed.

Every wait is bounded in count and time; only the processes started here are stopped, by PID
(the harness stops any left on exit); the namespaces are removed even on failure. Needs root
and iproute2, and fails saying so without them (scripts/system-packages installs iproute2).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from chunkraft.chaos.faults import NetworkFaults
from chunkraft.chaos.netns import Hosts, kernel_names
from chunkraft.controller.storage import random_cluster_id
from chunkraft.deploy.host_config import (
    BrokerPaths,
    ClusterHosts,
    ControllerHost,
    ControllerPaths,
    render_broker_properties,
    render_command_config,
    render_controller_properties,
)
from chunkraft.local.local_cluster import write_private
from chunkraft.security import credentials

CONTROLLERS = 3
BROKERS = 3
CLIENT = CONTROLLERS + BROKERS
"""The client host's index (hosts 0..2 are controllers 1..3, hosts 3..5 brokers 0..2)."""
REPLACEMENT = CLIENT + 1
"""The host of controller 4, which replaces a controller host that died."""
NEW_CONTROLLER = CONTROLLERS + 1
BUDGET_S = 180.0
"""The whole test must take less than this on the project's 2-core machines."""
READY_S = 60.0
POLL_S = 0.25
STOP_S = 20.0
LOG_TAIL_BYTES = 3000

# Runs on the client host (standard library only: it starts in tens of milliseconds). Reads
# {"requests": {key: [method, url, body or null, authenticate]}, "token": ..., "timeout": s}
# from stdin (the token stays out of the process list) and prints {key: [status, body]}, with
# status null when nothing answered.
_HTTP = textwrap.dedent("""
    import json, sys, urllib.error, urllib.request
    request = json.load(sys.stdin)
    answers = {}
    for key, (method, url, body, authenticate) in request["requests"].items():
        headers = {"content-type": "application/json"}
        if authenticate:
            headers["authorization"] = "Bearer " + request["token"]
        data = None if body is None else json.dumps(body).encode()
        try:
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            with urllib.request.urlopen(req, timeout=request["timeout"]) as response:
                answers[key] = [response.status, json.load(response)]
        except urllib.error.HTTPError as error:
            answers[key] = [error.code, None]
        except Exception:
            answers[key] = [None, None]
    print(json.dumps(answers))
""")

# Runs KIP-1114's demo story (chunkraft.local.client_demo) on the client host against the
# URLs it is given, with the admin's credentials from the host's --command-config file.
_DEMO = textwrap.dedent("""
    import json, sys
    from chunkraft.client.command_config import CommandConfig
    from chunkraft.local.client_demo import DemoTarget, run_client_demo
    request = json.load(sys.stdin)
    token = CommandConfig.load(request["command_config"]).token
    brokers = {int(b): url for b, url in request["brokers"].items()}
    run_client_demo(DemoTarget(request["controllers"], brokers, token), sys.stdout)
""")

T = TypeVar("T")


@pytest.fixture(autouse=True)
def _root_and_iproute2() -> None:
    """Network namespaces need root and iproute2; the project's machines and CI run as root,
    so a machine without them fails here, saying why, rather than skipping unchecked."""
    assert os.geteuid() == 0, "the multi-host test needs root (network namespaces)"
    assert shutil.which("ip") is not None, "the multi-host test needs iproute2 (ip)"


def chunkraft_command() -> str:
    """The ``chunkraft`` console script of the running interpreter's environment."""
    command = Path(sys.executable).parent / "chunkraft"
    assert command.exists(), f"no chunkraft command beside {sys.executable}: install the project"
    return str(command)


def log_tail(path: Path) -> str:
    try:
        return path.read_bytes()[-LOG_TAIL_BYTES:].decode("utf-8", "replace")
    except OSError as error:
        return f"<no log: {error}>"


@dataclass
class Node:
    """One controller or broker: its host, its rendered file and its process (None: stopped)."""

    name: str
    host: int
    config: Path
    log: Path
    url: str
    process: subprocess.Popen[bytes] | None = None


@dataclass
class Deployment:
    """The seven hosts' files, written as an operator would (each host its own ``/etc`` and
    ``/var/lib`` under ``root/host-<i>``), and the nodes started from them. Not thread-safe."""

    hosts: Hosts
    root: Path
    layout: ClusterHosts = field(init=False)
    controllers: dict[int, Node] = field(default_factory=dict)
    brokers: dict[int, Node] = field(default_factory=dict)
    data_dirs: dict[int, Path] = field(default_factory=dict)
    admin_token: str = field(default="", repr=False)
    password: str = field(default="", repr=False)
    digests: list[credentials.CredentialEntry] = field(default_factory=list, repr=False)
    command_config: Path = field(init=False)
    chunkraft: str = field(default_factory=chunkraft_command)

    def __post_init__(self) -> None:
        self.layout = ClusterHosts(random_cluster_id(), tuple(
            ControllerHost(index + 1, self.hosts[index].address)
            for index in range(CONTROLLERS)))
        tokens = {principal: credentials.generate_token() for principal in
                  ["User:admin", *(f"User:broker-{b}" for b in range(BROKERS))]}
        self.admin_token = tokens["User:admin"]
        digests = [credentials.CredentialEntry(principal, credentials.token_digest(token),
                                               credentials.now_text(), "multi-host test")
                   for principal, token in tokens.items()]
        self.password = secrets.token_urlsafe(24)
        self.digests = digests
        for index in range(CONTROLLERS):
            self._controller_files(index + 1, index, self.layout)
        for broker_id in range(BROKERS):
            index = CONTROLLERS + broker_id
            etc, var = self._host_dirs(index)
            files = BrokerPaths(var / "broker", etc / "broker.token", etc / "credentials.json")
            write_private(files.token_file, tokens[f"User:broker-{broker_id}"] + "\n")
            credentials.write_credentials(files.credentials_file, digests)
            config = etc / "broker.properties"
            address = self.hosts[index].address
            config.write_text(render_broker_properties(self.layout, broker_id, address,
                                                       paths=files))
            self.brokers[broker_id] = Node(f"broker {broker_id}", index, config,
                                           var / "broker.log", self.layout.broker_url(address))
        etc, _ = self._host_dirs(CLIENT)
        write_private(etc / "admin.token", self.admin_token + "\n")
        self.command_config = etc / "admin.properties"
        self.command_config.write_text(render_command_config(etc / "admin.token"))

    def _controller_files(self, node_id: int, index: int, layout: ClusterHosts) -> Node:
        """Controller ``node_id``'s files on host ``index``, its properties rendered from
        ``layout``; its Node (not started)."""
        etc, var = self._host_dirs(index)
        paths = ControllerPaths(var / "controller", etc / "raft-password",
                                etc / "credentials.json")
        write_private(paths.raft_password_file, self.password + "\n")
        credentials.write_credentials(paths.credentials_file, self.digests)
        self.data_dirs[node_id] = paths.data_dir
        config = etc / "controller.properties"
        config.write_text(render_controller_properties(layout, node_id, paths=paths))
        node = Node(f"controller {node_id}", index, config, var / "controller.log",
                    layout.controller_url(node_id))
        self.controllers[node_id] = node
        return node

    def _host_dirs(self, index: int) -> tuple[Path, Path]:
        etc = self.root / f"host-{index}" / "etc" / "chunkraft"
        var = self.root / f"host-{index}" / "var" / "lib" / "chunkraft"
        etc.mkdir(parents=True, exist_ok=True)
        var.mkdir(parents=True, exist_ok=True)
        return etc, var

    # -------------------------------------------------------------- processes on the hosts

    def format_controllers(self, node_ids: list[int] | None = None, *,
                           joining: bool = False) -> None:
        """``chunkraft controller format`` on each controller host (of ``node_ids``), all at
        once; ``joining``: with ``--no-initial-controllers``."""
        formats = {}
        for node_id in list(self.controllers) if node_ids is None else node_ids:
            node = self.controllers[node_id]
            formats[node_id] = self.hosts.popen(node.host, [
                self.chunkraft, "controller", "format", "--cluster-id", self.layout.cluster_id,
                "--data-dir", str(self.data_dirs[node_id]), "--node-id", str(node_id),
                *(["--no-initial-controllers"] if joining else [])],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for node_id, process in formats.items():
            output, _ = process.communicate(timeout=60)
            assert process.returncode == 0, f"format of controller {node_id}: {output!r}"

    def start(self, node: Node, role: str) -> None:
        """``chunkraft <role> --config <its file>`` inside its host's namespace."""
        with node.log.open("ab") as log:
            node.process = self.hosts.popen(
                node.host, [self.chunkraft, role, "--config", str(node.config)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)

    def check_running(self) -> None:
        for node in [*self.controllers.values(), *self.brokers.values()]:
            if node.process is not None and node.process.poll() is not None:
                raise AssertionError(f"{node.name} exited with status "
                                     f"{node.process.returncode}:\n{log_tail(node.log)}")

    def stop_all(self) -> None:
        """SIGTERM to the brokers (a controlled shutdown needs the quorum), then the
        controllers; SIGKILL, by PID, to any still running after :data:`STOP_S`."""
        for group in (self.brokers.values(), self.controllers.values()):
            running = [n for n in group if n.process is not None and n.process.poll() is None]
            for node in running:
                assert node.process is not None
                node.process.send_signal(signal.SIGTERM)
            for node in running:
                assert node.process is not None
                try:
                    node.process.wait(STOP_S)
                except subprocess.TimeoutExpired:
                    node.process.kill()
                    node.process.wait(STOP_S)

    def client(self, argv: list[str], *, stdin: str | None = None, timeout: float = 60.0
               ) -> subprocess.CompletedProcess[str]:
        """Runs ``argv`` on the client host to completion (bounded by ``timeout``)."""
        return subprocess.run(self.hosts.command(CLIENT, argv), input=stdin,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def replace_controller(self, dead: int, node_id: int, index: int) -> Node:
        """Controller ``node_id`` on host ``index`` in place of ``dead``: the layout without
        ``dead`` and with it, its files, its data dir formatted to join; not started."""
        kept = [c for c in self.layout.controllers if c.node_id != dead]
        self.layout = ClusterHosts(self.layout.cluster_id, (
            *kept, ControllerHost(node_id, self.hosts[index].address)))
        self.controllers.pop(dead)
        node = self._controller_files(node_id, index, self.layout)
        self.format_controllers([node_id], joining=True)
        return node

    def admin_tool(self, *args: str, timeout: float = 60.0) -> str:
        """A ``chunkraft`` admin command on the client host, against every controller of the
        current layout; its output (AssertionError with it if it fails)."""
        result = self.client([self.chunkraft, *args, "--bootstrap-server",
                              self.layout.bootstrap_servers, "--command-config",
                              str(self.command_config)], timeout=timeout)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result.stdout

    def http(self, requests: dict[str, tuple[str, str, Any, bool]], timeout: float = 2.0
             ) -> dict[str, tuple[int | None, Any]]:
        """HTTP requests sent from the client host: ``key -> (method, url, JSON body or
        None, authenticate as the admin)``; ``key -> (status or None, JSON body)``."""
        result = self.client([sys.executable, "-c", _HTTP], stdin=json.dumps({
            "requests": requests, "token": self.admin_token, "timeout": timeout}),
            timeout=timeout * len(requests) + 15)
        assert result.returncode == 0, result.stderr
        answers: dict[str, list[Any]] = json.loads(result.stdout)
        return {key: (answer[0], answer[1]) for key, answer in answers.items()}

    def quorum(self, node_ids: list[int] | None = None) -> dict[int, dict[str, Any] | None]:
        """Each controller's ``/controller/v1/quorum?hash=true`` answer (None: no answer)."""
        targets = list(self.controllers) if node_ids is None else node_ids
        answers = self.http({str(n): ("GET", f"{self.controllers[n].url}/controller/v1/quorum"
                                      "?hash=true", None, True) for n in targets})
        return {int(key): body if status == 200 else None
                for key, (status, body) in answers.items()}

    def broker_statuses(self) -> dict[int, dict[str, Any] | None]:
        """Each broker's ``/broker/v1/status`` answer (None: no answer)."""
        answers = self.http({str(b): ("GET", f"{node.url}/broker/v1/status", None, True)
                             for b, node in self.brokers.items()})
        return {int(key): body if status == 200 else None
                for key, (status, body) in answers.items()}

    def wait(self, what: str, check: Callable[[], T | None], timeout: float = READY_S) -> T:
        """Polls ``check`` until it returns something other than None (at most ``timeout``
        seconds and a bounded number of times), checking that every node still runs."""
        deadline = time.monotonic() + timeout
        for _ in range(int(timeout / POLL_S) + 1):
            self.check_running()
            found = check()
            if found is not None:
                return found
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        raise AssertionError(f"{what}: not within {timeout:.0f} s; logs under {self.root}")

    def print_logs(self) -> None:
        for node in [*self.controllers.values(), *self.brokers.values()]:
            print(f"---- {node.name} ({node.log}):\n{log_tail(node.log)}")


def agreed_leader(answers: dict[int, dict[str, Any] | None], node_ids: list[int]) -> int | None:
    """The leader every one of ``node_ids`` names while ready, or None."""
    views = [answers.get(n) for n in node_ids]
    if any(view is None or not view.get("ready") for view in views):
        return None
    leaders = {view["leader_id"] for view in views if view is not None}
    leader = leaders.pop() if len(leaders) == 1 else None
    return leader if isinstance(leader, int) and leader in node_ids else None


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    """The eight hosts with their files; every node stopped and every namespace removed at the
    end, pass or fail (the node logs are printed on failure)."""
    with Hosts(CONTROLLERS + BROKERS + 2) as hosts:
        made = Deployment(hosts, tmp_path)
        failed = True
        try:
            yield made
            failed = False
        finally:
            try:
                made.stop_all()
            finally:
                if failed:
                    made.print_logs()
    assert kernel_names(hosts.prefix) == []


def test_a_cluster_on_seven_hosts_runs_the_demo_and_survives_a_controller_host_cut(
        deployment: Deployment) -> None:
    begun = time.monotonic()
    timings: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        now = time.monotonic()
        timings[name] = round(now - since, 1)
        return now

    d = deployment
    for node in d.controllers.values():
        text = node.config.read_text()
        assert "0.0.0.0" not in text and "127.0.0.1" not in text
        assert f"listeners=http://{d.hosts[node.host].address}:9090" in text
    mark = time.monotonic()

    # The quorum forms: each controller formatted and started on its own host.
    d.format_controllers()
    for node in d.controllers.values():
        d.start(node, "controller")
    ids = list(d.controllers)
    leader = d.wait("one leader, all three controllers ready",
                    lambda: agreed_leader(d.quorum(), ids))
    mark = lap("quorum formed", mark)

    # The brokers' principals may act as brokers (what registering and heartbeats need) and
    # use the internal topics: the operator's ACLs, added from the client host.
    principals = [arg for b in d.brokers for arg in ("--allow-principal", f"User:broker-{b}")]
    d.admin_tool("acls", "--add", *principals, "--operation", "ClusterAction", "--cluster")
    d.admin_tool("acls", "--add", *principals, "--operation", "Create", "--operation", "Write",
                 "--operation", "Read", "--operation", "Describe", "--topic", "__",
                 "--resource-pattern-type", "PREFIXED")
    for node in d.brokers.values():
        d.start(node, "broker")

    def brokers_unfenced() -> dict[int, dict[str, Any]] | None:
        statuses = d.broker_statuses()
        if all(s is not None and s.get("broker_epoch", -1) >= 0 and s.get("fenced") is False
               for s in statuses.values()):
            return {b: s for b, s in statuses.items() if s is not None}
        return None

    d.wait("brokers 0, 1, 2 registered and unfenced", brokers_unfenced)
    # The controllers know each broker by its own host's address.
    answer = d.http({"m": ("POST", f"{d.controllers[leader].url}/controller/v1/metadata",
                           {"topics": [], "include_chunks": False}, True)})["m"]
    assert answer[0] == 200, answer
    registered = {b["node_id"]: (b["host"], b["port"], b["fenced"]) for b in answer[1]["brokers"]}
    assert registered == {b: (d.hosts[node.host].address, 9092, False)
                          for b, node in d.brokers.items()}, registered
    mark = lap("brokers registered and unfenced", mark)

    # KIP-1114's demo story, from the client host, against the hosts' addresses.
    demo = d.client([sys.executable, "-c", _DEMO], stdin=json.dumps({
        "controllers": d.layout.controller_urls, "command_config": str(d.command_config),
        "brokers": {str(b): node.url for b, node in d.brokers.items()}}), timeout=150)
    print(demo.stdout)
    assert demo.returncode == 0, (demo.stdout[-3000:], demo.stderr[-3000:])
    for served in ("broker 0 served offsets 0..9", "broker 1 served offsets 10..19",
                   "broker 2 served offsets 0..9"):
        assert served in demo.stdout, served
    assert "== Done" in demo.stdout
    mark = lap("KIP-1114 demo story", mark)

    # One controller host's link goes down: the leader's, so the majority must also elect.
    faults = NetworkFaults(d.hosts)
    cut = d.wait("a leader", lambda: agreed_leader(d.quorum(), ids))
    majority = [n for n in ids if n != cut]
    faults.link_down(d.controllers[cut].host)
    d.admin_tool("topics", "--create", "--topic", "written-while-cut", "--partitions", "3",
                 "--replication-factor", "3", timeout=90)
    written = d.wait("the majority to agree on a new leader and show the topic",
                     lambda: _majority_view(d, majority))
    assert d.quorum([cut])[cut] is None, "the cut controller still answered"
    mark = lap("write committed by the majority with the leader's link down", mark)

    faults.heal_all()

    def rejoined() -> dict[int, dict[str, Any]] | None:
        answers = d.quorum()
        if agreed_leader(answers, ids) is None:
            return None
        views = {n: a for n, a in answers.items() if a is not None}
        hashes = {a["image_hash"] for a in views.values()}
        if len(hashes) == 1 and all(a["metadata_offset"] >= written for a in views.values()):
            return views
        return None

    views = d.wait("the cut controller ready again, caught up on the majority's image",
                   rejoined)
    assert views[cut]["topics"] == views[majority[0]]["topics"]
    mark = lap("cut controller rejoined and caught up", mark)
    # The brokers, whose controller calls met the cut too, are registered and unfenced.
    d.wait("brokers 0, 1, 2 unfenced after the heal", brokers_unfenced)
    mark = lap("brokers unfenced after the heal", mark)

    replaced = _replace_a_dead_controller_host(d, faults, views[cut]["leader_id"])
    mark = lap(f"controller {replaced} replaced by controller {NEW_CONTROLLER} on a new host",
               mark)
    d.wait("brokers 0, 1, 2 unfenced after the replacement", brokers_unfenced)
    lap("brokers unfenced after the replacement", mark)
    timings["total"] = round(time.monotonic() - begun, 1)
    print(f"multi-host timings (s): {timings}; leader {leader}, cut controller {cut}, new "
          f"leader {views[cut]['leader_id']}")
    assert timings["total"] < BUDGET_S, timings


def _replace_a_dead_controller_host(d: Deployment, faults: NetworkFaults, leader: int) -> int:
    """A follower's host dies for good (its process killed, its link down); it is removed,
    and controller 4 on the eighth host added. Returns the dead controller's id."""
    dead = next(n for n in sorted(d.controllers) if n != leader)
    node = d.controllers[dead]
    assert node.process is not None
    node.process.kill()
    node.process.wait(STOP_S)
    node.process = None
    faults.link_down(node.host)
    survivors = [n for n in d.controllers if n != dead]
    removed = d.admin_tool("quorum", "remove-controller", "--controller-id", str(dead))
    assert f"Removed controller {dead}" in removed, removed
    new = d.replace_controller(dead, NEW_CONTROLLER, REPLACEMENT)
    assert (d.data_dirs[NEW_CONTROLLER] / "raft" / "joining").exists()
    text = new.config.read_text()
    assert d.hosts[REPLACEMENT].address in text and d.hosts[node.host].address not in text
    d.start(new, "controller")
    added = d.admin_tool("quorum", "add-controller", "--controller-config", str(new.config))
    assert f"Added controller {NEW_CONTROLLER}" in added, added
    ids = [*survivors, NEW_CONTROLLER]

    def three_voters_on_one_image() -> dict[int, dict[str, Any]] | None:
        answers = d.quorum(ids)
        chosen = agreed_leader(answers, ids)
        if chosen is None:
            return None
        views = {n: a for n, a in answers.items() if a is not None}
        voters = {v["node_id"]: v for v in views[chosen]["voters"]}
        if set(voters) != set(ids) or any(v["lag"] != 0 for v in voters.values()):
            return None
        if len({a["image_hash"] for a in views.values()}) != 1:
            return None
        return views

    d.wait("controller 4 a voter, caught up on the survivors' image", three_voters_on_one_image)
    d.admin_tool("topics", "--create", "--topic", "after-replacement", "--partitions", "1",
                 "--replication-factor", "3", timeout=90)
    views = d.wait("the topic on all three voters", three_voters_on_one_image)
    assert all(view["topics"] == views[NEW_CONTROLLER]["topics"] for view in views.values())
    return dead


def _majority_view(d: Deployment, majority: list[int]) -> int | None:
    """The offset the majority's leader has reached once both majority nodes agree on a
    leader among themselves and it holds the topic written during the cut; else None."""
    answers = d.quorum(majority)
    leader = agreed_leader(answers, majority)
    if leader is None:
        return None
    topic = d.http({"t": ("POST", f"{d.controllers[leader].url}/controller/v1/metadata",
                          {"topics": [{"name": "written-while-cut"}],
                           "include_chunks": False}, True)})["t"]
    if topic[0] != 200 or topic[1]["topics"][0].get("error_code", 0) != 0:
        return None
    if len(topic[1]["topics"][0]["partitions"]) != 3:
        return None
    view = answers[leader]
    return int(view["metadata_offset"]) if view is not None else None
