"""Replacing a dead voter under load: chunkraft's quorum against etcd 3.4's, in one run.

Each system: 3 members on 127.0.0.1, ``--clients`` threads each writing then reading in a
loop (chunkraft: an ACL created, then the cluster's ACLs of that principal listed, through the
``AdminClient``; etcd: a 200-byte put, then a range read of the key, over its JSON gateway).
After ``--warmup`` seconds a follower is killed (kill -9: its host is gone); it is removed from
the voters, a new member on new ports is started and added (chunkraft: ``POST/DELETE
/controller/v1/quorum/voters`` as ``chunkraft quorum remove-controller / add-controller`` send
them, the new data dir formatted with ``--no-initial-controllers``; etcd: ``member remove``,
``member add`` and a member started with ``--initial-cluster-state existing``), and the load
runs ``--after`` more seconds once the new member has caught up.

Every client retries within its own bounds, as a user's would (chunkraft's AdminClient: 30 s
with one idempotency key per write; the etcd client here: the next member, for 30 s). An
operation that still fails is a failed operation. Reported per system: operations, failed
operations, latency p50 / p99 / max of those that ran while the replacement was under way, and
how long each step took. Exit status 1 when chunkraft failed an operation (the target is 0) or
when the reference (etcd) row has errors.

Prints one JSON line per system and a table; ``--record`` appends them to bench/RESULTS.md.
Only processes started here are signalled, by PID.
"""

from __future__ import annotations

import argparse
import base64
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from _etcd import EtcdCluster, ensure_etcd, etcd_version
from _report import append_section, emit
from chunkraft.client.admin import AdminClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.local.node_process import free_ports

RETRY_FOR = 30.0
WAIT_S = 60.0
CAUGHT_UP_ENTRIES = 1000
"""As chunkraft's status counts a voter caught up: within this many Raft entries."""


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class Load:
    """``clients`` threads running ``operation(client_index, n)`` until stopped; each
    operation's start, latency and error (None: it succeeded)."""

    operation: Callable[[int, int], None]
    clients: int
    results: list[tuple[float, float, str | None]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for index in range(self.clients):
            thread = threading.Thread(target=self._run, args=(index,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _run(self, index: int) -> None:
        for n in range(1_000_000):
            if self._stop.is_set():
                return
            began = time.monotonic()
            error = None
            try:
                self.operation(index, n)
            except Exception as failure:  # every failure is counted, whatever it is
                error = f"{type(failure).__name__}: {failure}"[:300]
            self.results.append((began, time.monotonic() - began, error))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(RETRY_FOR + 30)


def summary(system: str, load: Load, window: tuple[float, float],
            steps: dict[str, float], **extra: Any) -> dict[str, Any]:
    during = [latency for began, latency, error in load.results
              if error is None and window[0] <= began <= window[1]]
    before = [latency for began, latency, error in load.results
              if error is None and began < window[0]]
    errors = [error for _, _, error in load.results if error is not None]
    return {"bench": "controller_replacement", "system": system,
            "clients": load.clients, "operations": len(load.results),
            "failed_operations": len(errors), "errors": errors[:5],
            "during_replacement": {"operations": len(during),
                                   "p50_ms": round(percentile(during, 0.5) * 1000, 1),
                                   "p99_ms": round(percentile(during, 0.99) * 1000, 1),
                                   "max_ms": round(max(during, default=0.0) * 1000, 1)},
            "before": {"operations": len(before),
                       "p50_ms": round(percentile(before, 0.5) * 1000, 1),
                       "p99_ms": round(percentile(before, 0.99) * 1000, 1)},
            "steps_s": {name: round(value, 2) for name, value in steps.items()}, **extra}


def wait_for(what: str, check: Callable[[], bool], timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout} s")
        time.sleep(0.1)


# --------------------------------------------------------------------------- chunkraft


def run_chunkraft(base: Path, args: argparse.Namespace) -> dict[str, Any]:
    cluster = LocalCluster(base / "chunkraft", size=3, broker_count=0)
    cluster.prepare()
    cluster.start()
    local = threading.local()
    config = CommandConfig(token=cluster.admin_token)

    def admin() -> AdminClient:
        if not hasattr(local, "client"):
            local.client = AdminClient(cluster.urls, config, timeout=10, retry_for=RETRY_FOR)
        client: AdminClient = local.client
        return client

    def operation(index: int, n: int) -> None:
        principal = f"User:bench-{index}"
        admin().create_acl({"resource_type": "TOPIC", "resource_name": f"t{index}-{n}",
                            "pattern_type": "LITERAL", "principal": principal, "host": "*",
                            "operation": "READ", "permission": "ALLOW"})
        admin().list_acls({"principal": principal, "resource_type": "TOPIC",
                           "resource_name": f"t{index}-{n}"})

    steps: dict[str, float] = {}
    try:
        leader = cluster.wait_ready(timeout=WAIT_S)
        load = Load(operation, args.clients)
        load.start()
        time.sleep(args.warmup)
        began = time.monotonic()
        epoch = (cluster.status(leader) or {}).get("epoch")
        dead = next(node for node in cluster.nodes if node != leader)
        cluster.kill(dead)
        mark = time.monotonic()
        with AdminClient(cluster.urls, config, retry_for=60, max_attempts=60) as operator:
            operator.write("DELETE", f"/controller/v1/quorum/voters/{dead}")
            steps["remove"] = time.monotonic() - mark
            cluster.forget_controller(dead)
            new = cluster.add_controller()
            cluster.start(new.node_id)
            mark = time.monotonic()
            operator.write("POST", "/controller/v1/quorum/voters", {
                "controller_id": new.node_id, "raft_address": f"127.0.0.1:{new.raft_port}",
                "http_url": new.url})
            steps["add"] = time.monotonic() - mark

        def caught_up() -> bool:
            """The new controller answers, the leader sees it connected, and it has applied
            all but CAUGHT_UP_ENTRIES of the entries the leader has committed."""
            current = cluster.leader_id()
            leader: dict[str, Any] = (cluster.status(current) or {}) if current is not None \
                else {}
            mine: dict[str, Any] = cluster.status(new.node_id) or {}
            voters = {v["node_id"]: v for v in leader.get("voters", [])}
            return (set(voters) == set(cluster.nodes)
                    and all(v["connected"] for v in voters.values())
                    and "last_applied_index" in mine
                    and int(mine["last_applied_index"])
                    >= int(leader["commit_index"]) - CAUGHT_UP_ENTRIES)

        wait_for("the new controller to catch up", caught_up)
        steps["new_member_caught_up"] = time.monotonic() - mark
        ended = time.monotonic()
        steps["replacement_total"] = ended - began
        epoch_after = (cluster.status(cluster.leader_id() or new.node_id) or {}).get("epoch")
        time.sleep(args.after)
        load.stop()
        return summary("chunkraft", load, (began, ended), steps,
                       leader_epoch_before=epoch, leader_epoch_after=epoch_after)
    finally:
        cluster.stop()


# --------------------------------------------------------------------------- etcd


class EtcdClient:
    """Put and get over etcd's JSON gateway, trying the next member on a failure until
    :data:`RETRY_FOR` has passed (as a client with several endpoints does)."""

    def __init__(self, urls: Callable[[], list[str]]) -> None:
        self.urls = urls
        self._http = httpx.Client(timeout=httpx.Timeout(10.0, connect=2.0))
        self._next = secrets.randbelow(3)

    def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        deadline = time.monotonic() + RETRY_FOR
        last = "no member answered"
        while time.monotonic() < deadline:
            urls = self.urls()
            url = urls[self._next % len(urls)]
            try:
                answer = self._http.post(url + path, json=body)
                if answer.status_code == 200 and "error" not in answer.json():
                    result: dict[str, Any] = answer.json()
                    return result
                last = f"{url}: {answer.status_code} {answer.text[:200]}"
            except httpx.HTTPError as error:
                last = f"{url}: {type(error).__name__}"
            self._next += 1
            time.sleep(0.05)
        raise RuntimeError(last)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def run_etcd(base: Path, binary: str, args: argparse.Namespace) -> dict[str, Any]:
    cluster = EtcdCluster(base / "etcd", binary=binary)
    members = {i: cluster.urls[i] for i in range(cluster.size)}  # index -> client URL
    extra: list[subprocess.Popen[bytes]] = []
    local = threading.local()
    value = _b64("v" * 200)

    def client() -> EtcdClient:
        if not hasattr(local, "client"):
            local.client = EtcdClient(lambda: list(members.values()))
        etcd: EtcdClient = local.client
        return etcd

    def operation(index: int, n: int) -> None:
        key = _b64(f"bench-{index}-{n}")
        client().call("/v3/kv/put", {"key": key, "value": value})
        if not client().call("/v3/kv/range", {"key": key}).get("kvs"):
            raise RuntimeError("a put key was not found")

    steps: dict[str, float] = {}
    with cluster:
        leader = cluster.leader_index()
        load = Load(operation, args.clients)
        load.start()
        time.sleep(args.warmup)
        began = time.monotonic()
        dead = next(i for i in range(cluster.size) if i != leader)
        cluster.kill(dead)
        members.pop(dead)
        operator = EtcdClient(lambda: list(members.values()))
        mark = time.monotonic()
        listed = operator.call("/v3/cluster/member/list", {})["members"]
        dead_peer = f"http://127.0.0.1:{cluster.peer_ports[dead]}"
        dead_id = next(m["ID"] for m in listed if dead_peer in m.get("peerURLs", []))
        operator.call("/v3/cluster/member/remove", {"ID": dead_id})
        steps["remove"] = time.monotonic() - mark
        client_port, peer_port = free_ports(2)
        peer = f"http://127.0.0.1:{peer_port}"
        mark = time.monotonic()
        operator.call("/v3/cluster/member/add", {"peerURLs": [peer]})
        steps["add"] = time.monotonic() - mark
        survivors = ",".join(f"{cluster.names[i]}=http://127.0.0.1:{cluster.peer_ports[i]}"
                             for i in members)
        url = f"http://127.0.0.1:{client_port}"
        log = (cluster.base_dir / "m4.log").open("ab")
        process = subprocess.Popen(
            [binary, "--name", "m4", "--data-dir", str(cluster.base_dir / "m4"),
             "--listen-client-urls", url, "--advertise-client-urls", url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"{survivors},m4={peer}", "--initial-cluster-state",
             "existing", "--initial-cluster-token", "chunkraft-bench", "--log-level", "warn",
             "--logger", "zap"], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        extra.append(process)
        try:
            def caught_up() -> bool:
                statuses = []
                for member in [*members.values(), url]:
                    try:
                        statuses.append(httpx.post(f"{member}/v3/maintenance/status", json={},
                                                   timeout=2.0).json())
                    except (httpx.HTTPError, ValueError):
                        return False
                indexes = [int(s.get("raftIndex", -1)) for s in statuses]
                return min(indexes) >= 0 and max(indexes) - indexes[-1] <= CAUGHT_UP_ENTRIES

            try:
                wait_for("the new etcd member to catch up", caught_up)
            except TimeoutError:
                print((cluster.base_dir / "m4.log").read_text()[-3000:], file=sys.stderr)
                raise
            steps["new_member_caught_up"] = time.monotonic() - mark
            ended = time.monotonic()
            steps["replacement_total"] = ended - began
            members[cluster.size] = url
            time.sleep(args.after)
            load.stop()
        finally:
            for started in extra:
                if started.poll() is None:
                    started.terminate()
                    started.wait(10)
    return summary("etcd", load, (began, ended), steps, version=etcd_version(binary))



def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| system | operations | failed | before: p50 / p99 ms | during the replacement: "
             "ops, p50 / p99 / max ms | remove s | add s | new member caught up s | "
             "whole replacement s |", "|---|---:|---:|---|---|---:|---:|---:|---:|"]
    for row in rows:
        during, steps, before = row["during_replacement"], row["steps_s"], row["before"]
        lines.append(
            f"| {row['system']} | {row['operations']} | {row['failed_operations']} | "
            f"{before['p50_ms']} / {before['p99_ms']} | "
            f"{during['operations']}, {during['p50_ms']} / {during['p99_ms']} / "
            f"{during['max_ms']} | {steps['remove']} | {steps['add']} | "
            f"{steps['new_member_caught_up']} | {steps['replacement_total']} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--after", type=float, default=3.0)
    parser.add_argument("--record", action="store_true", help="append to bench/RESULTS.md")
    args = parser.parse_args(argv)
    binary = ensure_etcd()
    if binary is None:
        print("etcd is not installed and cannot be (the reference is required)",
              file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-replace-") as temp:
        rows = [run_chunkraft(Path(temp), args), run_etcd(Path(temp), binary, args)]
    for row in rows:
        emit(row)
    lines = table(rows)
    print("\n".join(lines))
    chunkraft, etcd = rows
    if args.record:
        append_section("Replacing a dead voter under load", lines)
    failed = False
    if chunkraft["failed_operations"]:
        print(f"chunkraft failed {chunkraft['failed_operations']} operations (target 0): "
              f"{chunkraft['errors']}", file=sys.stderr)
        failed = True
    if etcd["failed_operations"]:
        print(f"the etcd reference row has errors: {etcd['errors']}", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
