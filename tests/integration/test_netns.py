"""Hosts on real network namespaces with real processes, and the network faults on them.

Needs root and iproute2; the loss test needs ``nft`` (package nftables) and the delay test a
kernel with netem or else ``iptables`` (package iptables) and nfnetlink_queue; each fails,
saying what is missing, on a machine without them (scripts/system-packages installs both).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.chaos.faults import NetworkFaults
from chunkraft.chaos.netns import Hosts, kernel_names, leftover_prefixes
from chunkraft.chaos.netns_cluster import NetnsCluster


@pytest.fixture(autouse=True)
def _root_and_iproute2() -> None:
    """Network namespaces need root and iproute2; the project's machines and CI run as root,
    so a machine without them fails here, saying why, rather than skipping unchecked."""
    assert os.geteuid() == 0, "the network-namespace tests need root"
    assert shutil.which("ip") is not None, "the network-namespace tests need iproute2 (ip)"

ECHO_SERVER = textwrap.dedent("""
    import socket, sys
    server = socket.create_server((sys.argv[1], int(sys.argv[2])))
    print("listening", flush=True)
    for _ in range(100):
        conn, _ = server.accept()
        with conn:
            conn.sendall(conn.recv(1024))
""")
ECHO_CLIENT = textwrap.dedent("""
    import socket, sys
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5) as conn:
        conn.sendall(b"hello from " + sys.argv[3].encode())
        print(conn.recv(1024).decode())
""")
# count attempts at a TCP handshake (to the closed discard port: a refusal is an answer);
# prints how many were answered and their round trips.
PROBES = textwrap.dedent("""
    import json, socket, sys, time
    address, count, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    rtts = []
    for _ in range(count):
        s = socket.socket(); s.settimeout(timeout); start = time.monotonic()
        try:
            s.connect((address, 9)); rtts.append(time.monotonic() - start)
        except ConnectionRefusedError:
            rtts.append(time.monotonic() - start)
        except OSError:
            pass
        finally:
            s.close()
    print(json.dumps(rtts))
""")

# Takes connections and reads them to the end.
SINK = textwrap.dedent("""
    import socket, sys
    server = socket.create_server((sys.argv[1], int(sys.argv[2])))
    print("listening", flush=True)
    for _ in range(10):
        conn, _ = server.accept()
        with conn:
            while conn.recv(1 << 20):
                pass
""")
# Sends for a few seconds; prints the bytes per second sent.
BULK = textwrap.dedent("""
    import socket, sys, time
    seconds = float(sys.argv[3])
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10) as conn:
        block, sent, start = b"x" * 65536, 0, time.monotonic()
        while time.monotonic() - start < seconds:
            conn.sendall(block)
            sent += len(block)
        print(sent / (time.monotonic() - start))
""")


def probes(hosts: Hosts, source: int, target: int, count: int, timeout: float) -> list[float]:
    result = hosts.run(source, [sys.executable, "-c", PROBES, hosts[target].address,
                                str(count), str(timeout)],
                       timeout=count * timeout + 15, check=True)
    rtts: list[float] = json.loads(result.stdout)
    return rtts


def reachable_pairs(hosts: Hosts) -> set[tuple[int, int]]:
    return {(a, b) for a in range(hosts.count) for b in range(hosts.count)
            if a != b and hosts.probe(a, b, timeout=0.5) is not None}


def all_pairs(count: int) -> set[tuple[int, int]]:
    return {(a, b) for a in range(count) for b in range(count) if a != b}


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    with Hosts(4) as made:
        yield made
    assert kernel_names(made.prefix) == []


def test_hosts_reach_each_other_and_nothing_else(hosts: Hosts) -> None:
    server = hosts.popen(1, [sys.executable, "-c", ECHO_SERVER, hosts[1].address, "7000"],
                         stdout=subprocess.PIPE)
    assert server.stdout is not None
    assert server.stdout.readline() == b"listening\n"
    for client in (0, 2, 3):
        result = hosts.run(client, [sys.executable, "-c", ECHO_CLIENT, hosts[1].address,
                                    "7000", str(client)], check=True)
        assert result.stdout.strip() == f"hello from {client}"
    assert reachable_pairs(hosts) == all_pairs(4)
    # No route out: not the internet, not the host's own networks.
    assert hosts.run(0, ["ip", "route", "get", "1.1.1.1"]).returncode != 0
    assert hosts.run(0, ["ip", "-4", "route", "show", "default"]).stdout == ""
    bridge = subprocess.run(["ip", "-4", "addr", "show", "dev", hosts.layout.bridge],
                            capture_output=True, text=True, check=True).stdout
    assert "inet " not in bridge


def test_isolating_a_host_cuts_exactly_its_pairs_and_heal_restores(hosts: Hosts) -> None:
    faults = NetworkFaults(hosts)
    cut = faults.isolate(0)
    assert cut == {(0, b) for b in (1, 2, 3)} | {(b, 0) for b in (1, 2, 3)}
    assert reachable_pairs(hosts) == all_pairs(4) - cut
    faults.heal_all()
    assert reachable_pairs(hosts) == all_pairs(4)


def test_an_established_connection_is_cut_too(hosts: Hosts) -> None:
    server = hosts.popen(1, [sys.executable, "-c", ECHO_SERVER, hosts[1].address, "7001"],
                         stdout=subprocess.PIPE)
    assert server.stdout is not None
    assert server.stdout.readline() == b"listening\n"
    faults = NetworkFaults(hosts)
    faults.isolate(1)
    result = hosts.run(0, [sys.executable, "-c", ECHO_CLIENT, hosts[1].address, "7001", "0"])
    assert result.returncode != 0
    faults.heal_all()
    assert hosts.run(0, [sys.executable, "-c", ECHO_CLIENT, hosts[1].address, "7001",
                         "0"]).returncode == 0


def test_split_into_halves(hosts: Hosts) -> None:
    faults = NetworkFaults(hosts)
    faults.split_halves()
    assert reachable_pairs(hosts) == {(0, 1), (1, 0), (2, 3), (3, 2)}
    faults.heal_all()
    assert reachable_pairs(hosts) == all_pairs(4)


def test_a_flapping_link_goes_down_and_comes_back(hosts: Hosts) -> None:
    faults = NetworkFaults(hosts)
    faults.start_flap(2, down_seconds=1.0, up_seconds=1.0, cycles=3)
    time.sleep(0.2)
    assert hosts.probe(0, 2, timeout=0.3) is None
    assert hosts.probe(0, 1) is not None
    # Within one up phase the link answers again.
    assert hosts.wait_reachable(0, 2, timeout=3.0)
    faults.heal_all()
    assert reachable_pairs(hosts) == all_pairs(4)


def test_twenty_percent_loss_is_measurable_and_healed(hosts: Hosts) -> None:
    faults = NetworkFaults(hosts)
    faults.loss(0, 20)
    # Only host 0's outgoing SYNs are dropped (the refusals come back from a healthy host);
    # a 0.2 s timeout is below the SYN retransmission, so one drop is one lost probe.
    answered = len(probes(hosts, 0, 1, 200, 0.2))
    assert 200 * 0.65 <= answered <= 200 * 0.92, answered
    assert len(probes(hosts, 1, 2, 50, 0.2)) == 50
    faults.heal_all()
    assert len(probes(hosts, 0, 1, 50, 0.5)) == 50


def test_two_hundred_ms_delay_is_measurable_and_healed(hosts: Hosts) -> None:
    # netem where the kernel has it, else the NFQUEUE delayers (iptables); a machine with
    # neither fails here with FaultUnsupported saying what it lacks.
    faults = NetworkFaults(hosts)
    sink = hosts.popen(1, [sys.executable, "-c", SINK, hosts[1].address, "7002"],
                       stdout=subprocess.PIPE)
    assert sink.stdout is not None
    assert sink.stdout.readline() == b"listening\n"
    before = probes(hosts, 0, 1, 10, 2.0)
    faults.delay(0, 200)
    # What host 0 sends waits: its SYNs to host 1, and its refusals of host 1's SYNs.
    during = probes(hosts, 0, 1, 10, 2.0)
    answers = probes(hosts, 1, 0, 10, 2.0)
    others = probes(hosts, 1, 2, 10, 2.0)
    # A bulk transfer from the delayed host still flows (netem orphans what it holds; the
    # NFQUEUE delayers hold packets on arrival, so the sender's socket budget is not held).
    sent = hosts.run(0, [sys.executable, "-c", BULK, hosts[1].address, "7002", "3"],
                     check=True, timeout=30)
    rate = float(sent.stdout)
    mechanism = "nfqueue" if 0 in faults.delayers else "netem"
    faults.heal_all()
    after = probes(hosts, 0, 1, 10, 2.0)
    ms = {name: [round(rtt * 1000, 1) for rtt in rtts] for name, rtts in
          (("before", before), ("during", during), ("answers", answers), ("others", others),
           ("after", after))}
    print(mechanism, ms, f"bulk {rate / 1e6:.1f} MB/s", faults.delay_reports)
    assert len(before) == len(during) == len(answers) == len(others) == len(after) == 10, ms
    # Every delayed handshake waited 200 ms, none much longer; the medians of the others (a
    # busy machine may stall one probe) stay well under 20 ms.
    assert min(during) >= 0.2 and max(during) < 1.0, ms
    assert min(answers) >= 0.2 and max(answers) < 1.0, ms
    for fast in (before, others, after):
        assert statistics.median(fast) < 0.02, ms
    assert rate >= 1e6, f"{rate / 1e6:.2f} MB/s from the delayed host"
    assert faults.delayed == set() and faults.delayers == {}
    if mechanism == "nfqueue":
        reports = faults.delay_reports[0]
        assert sorted(reports) == [1, 2, 3], reports
        assert all(r["stopped_by"] == "signal" and r["errors"] == 0
                   for r in reports.values()), reports
        packets = reports[1]["packets"]
        assert isinstance(packets, int) and packets >= 20, reports
        for peer in (1, 2, 3):
            assert "NFQUEUE" not in hosts.run(peer, ["iptables", "-S", "INPUT"]).stdout
    else:
        assert "netem" not in hosts.run(0, ["tc", "qdisc", "show", "dev", "eth0"]).stdout


def test_a_killed_harness_is_cleaned_by_the_next(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import sys, time
        from chunkraft.chaos.netns import Hosts
        hosts = Hosts(2)
        hosts.__enter__()
        print(hosts.prefix, flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None
        prefix = child.stdout.readline().strip()
        assert prefix.startswith("ckr")
        assert kernel_names(prefix), "the child made nothing"
        assert prefix not in leftover_prefixes(), "a live harness is not a leftover"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        if child.stdout is not None:
            child.stdout.close()
    # (A harness of a parallel test may have removed it already.)
    assert prefix in leftover_prefixes() or kernel_names(prefix) == []
    with Hosts(2) as hosts:
        assert kernel_names(prefix) == []
        assert hosts.prefix != prefix
    assert kernel_names(hosts.prefix) == []


def test_a_leader_cut_from_the_majority_loses_leadership(tmp_path: Path) -> None:
    with Hosts(4) as hosts:
        cluster = NetnsCluster(tmp_path, size=3, hosts=hosts)
        cluster.prepare()
        cluster.start()
        try:
            old = cluster.wait_ready(timeout=60)
            majority = [n for n in cluster.nodes if n != old]
            faults = NetworkFaults(hosts)
            # The observer (host 3) stays in neither group: it sees both sides.
            faults.partition([cluster.host_index(old)],
                             [cluster.host_index(n) for n in majority])
            cut_at = time.monotonic()
            new = cluster.wait_leader(majority, timeout=30, exclude=old)
            elected_after = time.monotonic() - cut_at
            assert new in majority
            # The old leader steps down (pysyncobj's leader fallback timeout: no majority heard).
            views: dict[int, int | None] = {}
            for _ in range(100):
                views = cluster.leader_views()
                if old in views and views[old] != old:
                    break
                time.sleep(0.1)
            assert old in views, "the observer lost sight of the old leader"
            assert views[old] != old, views
            faults.heal_all()
            leader = cluster.wait_leader(list(cluster.nodes), timeout=30)
            assert leader in majority
            print(f"old leader {old}, new leader {new} elected {elected_after:.2f} s after the "
                  f"cut; after the heal all three follow {leader}")
        finally:
            cluster.stop()
    assert kernel_names(hosts.prefix) == []


def test_two_harnesses_coexist_and_cannot_reach_each_other() -> None:
    with Hosts(2) as first, Hosts(2) as second:
        assert first.prefix != second.prefix
        assert not first.layout.subnet.overlaps(second.layout.subnet)
        assert first.wait_reachable(0, 1) and second.wait_reachable(0, 1)
        # first's host 0 has no route to second's subnet at all.
        assert first.run(0, ["ip", "route", "get", second[0].address]).returncode != 0
    assert kernel_names(first.prefix) == kernel_names(second.prefix) == []
