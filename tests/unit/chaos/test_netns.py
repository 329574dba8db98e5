"""Hosts' names, addresses and commands, without touching the kernel (Layout is pure)."""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

import pytest

from chunkraft.chaos import netns
from chunkraft.chaos.netns import IFNAMSIZ, SUBNETS, TEST_NETWORK, Layout, netns_exec


def test_subnets_cover_the_test_network_exactly() -> None:
    assert SUBNETS == 512
    assert Layout(0, 1).subnet == ipaddress.IPv4Network("198.18.0.0/24")
    assert Layout(255, 1).subnet == ipaddress.IPv4Network("198.18.255.0/24")
    assert Layout(256, 1).subnet == ipaddress.IPv4Network("198.19.0.0/24")
    assert Layout(511, 1).subnet == ipaddress.IPv4Network("198.19.255.0/24")
    assert all(Layout(k, 1).subnet.subnet_of(TEST_NETWORK) for k in range(SUBNETS))


@pytest.mark.parametrize(("k", "count"), [(-1, 1), (512, 1), (0, 0), (0, 251)])
def test_out_of_range_layouts_are_refused(k: int, count: int) -> None:
    with pytest.raises(ValueError):
        Layout(k, count)


def test_hosts_get_distinct_addresses_and_names_with_the_prefix() -> None:
    layout = Layout(0x1A3, 250)
    hosts = layout.hosts
    assert layout.prefix == "ckr1a3"
    assert [h.address for h in hosts[:3]] == ["198.19.163.1", "198.19.163.2", "198.19.163.3"]
    assert hosts[-1].address == "198.19.163.250"
    assert len({h.address for h in hosts}) == len({h.netns for h in hosts}) == 250
    assert all(ipaddress.IPv4Address(h.address) in layout.subnet for h in hosts)
    for name in [*layout.names(), *(h.netns for h in hosts)]:
        assert name.startswith("ckr1a3-")
        assert len(name) <= IFNAMSIZ


def test_two_subnet_numbers_share_no_name_and_no_address() -> None:
    a, b = Layout(5, 10), Layout(6, 10)
    assert not set(a.names()) & set(b.names())
    assert not a.subnet.overlaps(b.subnet)


def test_host_index_out_of_range() -> None:
    with pytest.raises(IndexError):
        Layout(0, 3).host(3)


def test_setup_gives_no_default_route_no_bridge_address_and_no_nat() -> None:
    commands = Layout(7, 3).setup_commands()
    flat = [" ".join(argv) for argv in commands]
    assert not [c for c in flat if "route" in c or "default" in c or "nat" in c.split()]
    # The only addresses set are the hosts' own, inside their namespaces.
    addr_adds = [argv for argv in commands if "addr" in argv]
    assert [argv[2] for argv in addr_adds] == ["ckr007-0", "ckr007-1", "ckr007-2"]
    assert [argv[5] for argv in addr_adds] == ["198.18.7.1/24", "198.18.7.2/24", "198.18.7.3/24"]
    assert ["ip", "link", "set", "ckr007-v1", "master", "ckr007-br"] in commands
    assert ["ip", "-n", "ckr007-2", "link", "set", "lo", "up"] in commands
    # Each namespace exists before its veth is made into it.
    assert flat.index("ip netns add ckr007-1") < next(
        i for i, c in enumerate(flat) if c.startswith("ip link add ckr007-v1"))


def test_netns_exec_keeps_the_command() -> None:
    assert netns_exec("ckr001-0", ["python", "-c", "pass"]) == [
        "ip", "netns", "exec", "ckr001-0", "python", "-c", "pass"]
    with pytest.raises(ValueError):
        netns_exec("ckr001-0", [])


def test_leftovers_are_prefixes_whose_owner_is_gone(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    monkeypatch.setattr(netns, "OWNER_DIR", tmp_path)
    monkeypatch.setattr(netns, "_existing_prefixes", lambda: {
        "ckr001": ["ckr001-0"], "ckr002": ["ckr002-br"], "ckr003": ["ckr003-v0"],
        "ckr004": ["ckr004-1"]})
    (tmp_path / "ckr001.pid").write_text(f"{os.getpid()}\n")
    (tmp_path / "ckr002.pid").write_text(f"{dead.pid}\n")
    (tmp_path / "ckr004.pid").write_text("not a pid\n")
    assert netns.leftover_prefixes() == ["ckr002", "ckr003", "ckr004"]
