"""NetworkFaults' pure pieces: which pairs a partition cuts and the commands it runs."""

from __future__ import annotations

import pytest

from chunkraft.chaos.faults import (
    cut_pairs,
    halves,
    loss_ruleset,
    netem_delay_command,
    route_command,
)


def test_isolating_one_host_cuts_it_from_each_other_host_both_ways() -> None:
    assert cut_pairs([[0], [1, 2]]) == {(0, 1), (1, 0), (0, 2), (2, 0)}


def test_a_partition_leaves_pairs_inside_a_group_alone() -> None:
    pairs = cut_pairs([[0, 1], [2, 3, 4]])
    assert len(pairs) == 2 * 2 * 3
    assert (0, 1) not in pairs and (2, 4) not in pairs
    assert all((b, a) in pairs for a, b in pairs)


def test_three_groups_cut_every_pair_across() -> None:
    assert cut_pairs([[0], [1], [2]]) == {(a, b) for a in range(3) for b in range(3) if a != b}


def test_overlapping_groups_are_refused() -> None:
    with pytest.raises(ValueError, match="two groups"):
        cut_pairs([[0, 1], [1, 2]])


def test_halves_put_the_majority_second() -> None:
    assert halves(3) == ([0], [1, 2])
    assert halves(4) == ([0, 1], [2, 3])
    assert halves(5) == ([0, 1], [2, 3, 4])
    with pytest.raises(ValueError):
        halves(1)


def test_route_commands() -> None:
    assert route_command("ckr001-0", "198.18.1.2", add=True) == [
        "ip", "-n", "ckr001-0", "route", "replace", "unreachable", "198.18.1.2/32"]
    assert route_command("ckr001-0", "198.18.1.2", add=False)[4] == "del"


def test_loss_ruleset_drops_the_percent_on_eth0_only() -> None:
    script = loss_ruleset(20)
    assert 'oifname "eth0" numgen random mod 100 < 20 drop' in script
    assert "hook output" in script
    for bad in (0, 101):
        with pytest.raises(ValueError):
            loss_ruleset(bad)


def test_netem_delay_command() -> None:
    assert netem_delay_command("ckr001-1", 200) == [
        "ip", "netns", "exec", "ckr001-1", "tc", "qdisc", "replace", "dev", "eth0", "root",
        "netem", "delay", "200ms"]
    assert netem_delay_command("ckr001-1", 200, 20)[-2:] == ["200ms", "20ms"]
    with pytest.raises(ValueError):
        netem_delay_command("ckr001-1", 0)
