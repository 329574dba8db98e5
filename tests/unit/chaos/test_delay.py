"""The NFQUEUE delayer (chunkraft.chaos.delay): its schedule, the delayer against a socketpair
standing in for the kernel, and how NetworkFaults picks it. The wire format: test_nfqueue."""

from __future__ import annotations

import os
import random
import socket
import struct
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any, cast

import pytest

from chunkraft.chaos import delay as delay_module
from chunkraft.chaos import faults
from chunkraft.chaos.delay import Delayer, DelayerError, DelaySchedule
from chunkraft.chaos.faults import (
    FaultUnsupported,
    NetworkFaults,
    delayer_command,
    nfqueue_rule_command,
)
from chunkraft.chaos.netns import Hosts, Layout
from chunkraft.chaos.nfqueue import NetlinkMessage, parse_attributes, parse_messages
from tests.unit.chaos.nfqueue_kernel import ack, kernel_packet

# Schedule -----------------------------------------------------------------------------------


def test_each_packet_is_due_a_delay_after_it_was_read() -> None:
    schedule = DelaySchedule(0.2)
    assert schedule.add(1, 10.0) == pytest.approx(10.2)
    assert schedule.add(2, 10.05) == pytest.approx(10.25)
    assert schedule.next_due() == pytest.approx(10.2)
    assert schedule.pop_due(10.19) is None
    assert schedule.pop_due(10.21) == 1
    assert schedule.pop_due(10.3) == 2
    assert schedule.pop_due(11.0) is None and schedule.next_due() is None
    assert schedule.max_held == 2
    assert schedule.max_late == pytest.approx(0.05)


def test_jitter_never_reorders_and_stays_within_its_bounds() -> None:
    schedule = DelaySchedule(0.2, 0.05, random.Random(4))
    dues = [schedule.add(packet_id, packet_id * 0.001) for packet_id in range(1, 500)]
    assert dues == sorted(dues)
    assert all(due - packet_id * 0.001 >= 0.15 for packet_id, due in enumerate(dues, 1))
    # Held behind a later-due packet, one may wait past delay + jitter, never before 0.15 s.
    assert max(due - i * 0.001 for i, due in enumerate(dues, 1)) <= 0.25 + 1e-9 + 0.05
    assert schedule.pop_all() == 499 and len(schedule) == 0


def test_schedule_arguments() -> None:
    with pytest.raises(ValueError):
        DelaySchedule(0)
    with pytest.raises(ValueError):
        DelaySchedule(0.1, 0.2)
    assert DelaySchedule(0.1).pop_all() is None


# The delayer against a stand-in kernel ------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, kernel = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with ours, kernel:
        kernel.settimeout(1.0)
        yield ours, kernel


def sent(kernel: socket.socket) -> list[NetlinkMessage]:
    kernel.setblocking(False)
    found: list[NetlinkMessage] = []
    for _ in range(100):
        try:
            found += parse_messages(kernel.recv(65536))
        except BlockingIOError:
            break
    kernel.settimeout(1.0)
    return found


def test_the_delayer_binds_configures_and_accepts_after_the_delay(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, kernel = pair
    clock = Clock()
    delayer = Delayer(ours, 200, DelaySchedule(0.2), clock=clock)
    # The kernel's acks wait in the socket (and a packet queued meanwhile is held too).
    kernel.send(ack(1))
    kernel.send(kernel_packet(200, 1))
    kernel.send(ack(2))
    delayer.configure(maxlen=500, fail_open=True)
    bind, settings = sent(kernel)
    assert parse_attributes(bind.payload[4:]) == {1: b"\x01\0\0\0"}
    attrs = parse_attributes(settings.payload[4:])
    assert attrs[3] == struct.pack("!I", 500)
    assert attrs[5] == struct.pack("!I", 0x4 | 0x1) and attrs[4] == struct.pack("!I", 0x5)
    assert len(delayer.schedule) == 1

    clock.now = 100.1
    kernel.send(kernel_packet(200, 2) + kernel_packet(200, 3))
    assert delayer.read_available() == 1
    assert delayer.timeout() == pytest.approx(0.1)
    delayer.release_due()
    assert sent(kernel) == []
    clock.now = 100.2
    delayer.release_due()
    (verdict,) = sent(kernel)
    assert verdict.kind == 0x0303
    assert parse_attributes(verdict.payload[4:])[2] == struct.pack("!II", 1, 1)
    clock.now = 100.31
    delayer.release_due()
    (verdict,) = sent(kernel)
    assert parse_attributes(verdict.payload[4:])[2] == struct.pack("!II", 1, 3)
    assert delayer.stats.packets == 3 and delayer.stats.verdicts == 2


def test_stopping_accepts_everything_held_then_unbinds(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, kernel = pair
    clock = Clock()
    delayer = Delayer(ours, 5, DelaySchedule(0.2), clock=clock)
    ours.settimeout(0.0)
    kernel.send(kernel_packet(5, 41) + kernel_packet(5, 42))
    delayer.read_available()
    delayer.stop()
    verdict, unbind = sent(kernel)
    assert parse_attributes(verdict.payload[4:])[2] == struct.pack("!II", 1, 42)
    assert parse_attributes(unbind.payload[4:]) == {1: b"\x02\0\0\0"}
    assert unbind.flags == 0x1  # not acknowledged: nothing left to wait for
    assert delayer.stats.released_at_stop == 2


def test_run_stops_on_a_signal_or_when_its_parent_is_gone(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, kernel = pair
    ours.settimeout(0.0)
    wake_read, wake_write = os.pipe()
    try:
        delayer = Delayer(ours, 5, DelaySchedule(0.2))
        kernel.send(kernel_packet(5, 8))
        os.write(wake_write, b"\x0f")  # what signal.set_wakeup_fd writes for SIGTERM
        delayer.run(wake_read, max_seconds=5, parent=os.getppid())
        assert delayer.stats.stopped_by == "signal"
        verdict, _unbind = sent(kernel)
        assert parse_attributes(verdict.payload[4:])[2] == struct.pack("!II", 1, 8)
        orphan = Delayer(ours, 5, DelaySchedule(0.2))
        orphan.run(wake_read, max_seconds=5, parent=os.getppid() + 1)
        assert orphan.stats.stopped_by == "parent gone"
        bounded = Delayer(ours, 5, DelaySchedule(0.2))
        os.read(wake_read, 1)
        bounded.run(wake_read, max_seconds=0.05, parent=None)
        assert bounded.stats.stopped_by == "max_seconds"
    finally:
        os.close(wake_read)
        os.close(wake_write)


def test_a_refusal_names_the_errno(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, kernel = pair
    kernel.send(ack(1, 16))
    with pytest.raises(DelayerError, match="bind of queue 9: EBUSY"):
        Delayer(ours, 9, DelaySchedule(0.2)).configure()


def test_a_refused_verdict_is_counted_not_fatal(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, kernel = pair
    delayer = Delayer(ours, 9, DelaySchedule(0.2))
    ours.settimeout(0.0)
    kernel.send(ack(3, 2))  # ENOENT
    delayer.read_available()
    assert delayer.stats.errors == 1


def test_no_answer_is_an_error(pair: tuple[socket.socket, socket.socket],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delay_module, "ACK_TIMEOUT_SECONDS", 0.05)
    ours, _kernel = pair
    with pytest.raises(DelayerError, match="no answer"):
        Delayer(ours, 9, DelaySchedule(0.2)).configure()


# How NetworkFaults delays -------------------------------------------------------------------


def test_delayer_and_rule_commands() -> None:
    assert nfqueue_rule_command("ckr001-1", "198.18.1.1", 200, add=True) == [
        "ip", "netns", "exec", "ckr001-1", "iptables", "-w", "5", "-A", "INPUT", "-i", "eth0",
        "-s", "198.18.1.1/32", "-j", "NFQUEUE", "--queue-num", "200", "--queue-bypass"]
    assert nfqueue_rule_command("ckr001-1", "198.18.1.1", 200, add=False)[7] == "-D"
    command = delayer_command(200, 20, 201)
    assert command[1:3] == ["-m", "chunkraft.chaos.delay"]
    assert command[3:] == ["--queue", "201", "--delay-ms", "200", "--jitter-ms", "20"]
    for bad in ((0, 0), (100, 101), (100, -1)):
        with pytest.raises(ValueError):
            delayer_command(*bad, 200)


# Stands in for the delayer: says it is ready, and on SIGTERM prints its counts.
FAKE_DELAYER = textwrap.dedent("""
    import json, signal, sys, time
    signal.signal(signal.SIGTERM, lambda *_: (print(json.dumps({"queue": int(sys.argv[2])}),
                                                    flush=True), sys.exit(0)))
    print(json.dumps({"ready": True}), flush=True)
    time.sleep(30)
""")
BROKEN_DELAYER = "import sys; print('no nfnetlink_queue here', file=sys.stderr); sys.exit(2)"


class FakeHosts:
    """Three hosts whose commands run here, outside any namespace; popen runs ``script``."""

    def __init__(self, script: str = FAKE_DELAYER) -> None:
        self.layout = Layout(1, 3)
        self.count = 3
        self.script = script
        self.started: list[tuple[int, list[str]]] = []
        self.processes: list[subprocess.Popen[bytes]] = []

    def __getitem__(self, index: int) -> Any:
        return self.layout.host(index)

    def popen(self, index: int, argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        self.started.append((index, argv))
        process = subprocess.Popen([sys.executable, "-c", self.script, *argv[3:]], **kwargs)
        self.processes.append(process)
        return process


def recording_run(calls: list[list[str]]) -> Any:
    """Stands in for faults._run: tc fails as on a kernel without netem, the rest succeeds."""
    def run(argv: Sequence[str], *, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        if "tc" in argv:
            return subprocess.CompletedProcess(list(argv), 2, "",
                                               "Error: Specified qdisc kind is unknown.")
        return subprocess.CompletedProcess(list(argv), 0, "", "")
    return run


def test_without_netem_nor_iptables_the_delay_is_unsupported_and_changes_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(faults, "_run", recording_run(calls))
    monkeypatch.setattr(faults, "iptables_available", lambda: False)
    hosts = FakeHosts()
    network = NetworkFaults(cast(Hosts, hosts))
    with pytest.raises(FaultUnsupported, match=r"netem .*qdisc kind is unknown.*iptables"):
        network.delay(1, 200)
    assert network.delayed == set() and network.delayers == {}
    assert [call[4:7] for call in calls] == [["tc", "qdisc", "replace"]]
    assert hosts.started == []


def test_without_netem_every_other_host_delays_what_it_receives_from_the_host(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(faults, "_run", recording_run(calls))
    monkeypatch.setattr(faults, "iptables_available", lambda: True)
    hosts = FakeHosts()
    network = NetworkFaults(cast(Hosts, hosts))
    network.delay(1, 200)
    assert network.delayed == {1} and sorted(network.delayers[1]) == [0, 2]
    assert [(peer, argv[3:5]) for peer, argv in hosts.started] == [
        (0, ["--queue", "201"]), (2, ["--queue", "201"])]
    source = hosts[1].address
    rules = [call for call in calls if "iptables" in call]
    assert rules == [nfqueue_rule_command(hosts[peer].netns, source, 201, add=True)
                     for peer in (0, 2)]
    calls.clear()
    network.heal_all()
    rules = [call for call in calls if "iptables" in call]
    assert rules == [nfqueue_rule_command(hosts[peer].netns, source, 201, add=False)
                     for peer in (0, 2)]
    assert network.delayed == set() and network.delayers == {}
    assert network.delay_reports == {1: {0: {"queue": 201}, 2: {"queue": 201}}}
    assert all(process.returncode == 0 for process in hosts.processes)


def test_a_delayer_that_cannot_start_leaves_no_rule_and_no_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(faults, "_run", recording_run(calls))
    monkeypatch.setattr(faults, "iptables_available", lambda: True)
    hosts = FakeHosts(BROKEN_DELAYER)
    network = NetworkFaults(cast(Hosts, hosts))
    with pytest.raises(FaultUnsupported, match=r"did not start.*no nfnetlink_queue here"):
        network.delay(0, 200)
    assert network.delayed == set() and network.delayers == {}
    assert [call for call in calls if "iptables" in call] == []
    assert all(process.poll() is not None for process in hosts.processes)
