"""Whether a quorum kept its leader over a window: sampled from every controller's own counts.

A steady quorum elects once and keeps its leader; a test or a benchmark that measures a steady
state is valid only if nothing moved while it ran. :func:`sample_leadership` asks each
controller's ``/controller/v1/quorum`` for the leader it knows, its Raft term and how many
changes of leader it has seen (``chunkraft_raft_leadership_changes``); :func:`leadership_moved`
compares two samples and names what moved, or returns None when nothing did;
:func:`leaderships_in_logs` reads every leader the controllers logged (across restarts), for
a count of elections over a whole run; :class:`AdminWriter` is the steady load such a check
runs under.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from chunkraft.client.admin import AdminClient, AdminError
from chunkraft.client.command_config import CommandConfig

__all__ = [
    "LEADER_LINE",
    "AdminWriter",
    "LeadershipSample",
    "NodeLeadership",
    "leadership_moved",
    "leaderships_in_logs",
    "sample_leadership",
]


@dataclass(frozen=True, slots=True)
class NodeLeadership:
    """What one controller said of the leadership."""

    leader_id: int | None
    epoch: int
    leadership_changes: int
    term_increments: int
    incarnation: str | None = None
    """The node's process incarnation: another one means it restarted in between."""


@dataclass(frozen=True, slots=True)
class LeadershipSample:
    """One answer per controller that answered (node id -> what it said)."""

    nodes: Mapping[int, NodeLeadership]

    def leaders(self) -> set[int | None]:
        return {node.leader_id for node in self.nodes.values()}

    def summary(self) -> str:
        return ", ".join(f"node {node_id}: leader {seen.leader_id} at term {seen.epoch}"
                         for node_id, seen in sorted(self.nodes.items()))

    def as_json(self) -> dict[str, object]:
        return {str(node_id): {"leader_id": seen.leader_id, "epoch": seen.epoch,
                               "leadership_changes": seen.leadership_changes,
                               "term_increments": seen.term_increments}
                for node_id, seen in sorted(self.nodes.items())}


def sample_leadership(urls: Mapping[int, str], *, headers: Mapping[str, str] | None = None,
                      verify: ssl.SSLContext | bool = True,
                      timeout: float = 2.0) -> LeadershipSample:
    """Each controller's view (``urls``: node id -> HTTP base URL); a controller that does not
    answer, or answers without these fields (not ready, refused), is left out."""
    nodes: dict[int, NodeLeadership] = {}
    for node_id, url in urls.items():
        try:
            answer = httpx.get(f"{url}/controller/v1/quorum", timeout=timeout,
                               headers=dict(headers or {}), verify=verify)
            body = answer.json() if answer.status_code == 200 else None
        except (httpx.HTTPError, json.JSONDecodeError):
            continue
        if not isinstance(body, dict):
            continue
        leader = body.get("leader_id")
        epoch, changes = body.get("epoch"), body.get("leadership_changes")
        increments = body.get("term_increments")
        if not (isinstance(epoch, int) and isinstance(changes, int)
                and isinstance(increments, int)):
            continue
        incarnation = body.get("incarnation")
        nodes[node_id] = NodeLeadership(leader if isinstance(leader, int) else None, epoch,
                                        changes, increments,
                                        incarnation if isinstance(incarnation, str) else None)
    return LeadershipSample(nodes)


def leadership_moved(before: LeadershipSample, after: LeadershipSample) -> str | None:
    """What moved between two samples of the same quorum, in words, or None if nothing did.

    Moved means: a controller answering in both saw another leader or term, or counted changes
    of leader in between; or the controllers of one sample did not agree on one leader. A
    controller that answered in only one sample is compared on the others' counts alone (it
    restarted, or stopped answering: the caller knows whether it meant to)."""
    problems: list[str] = []
    for name, sample in (("at the start", before), ("at the end", after)):
        leaders = sample.leaders()
        if len(leaders) > 1 or None in leaders:
            problems.append(f"the controllers did not agree on a leader {name} "
                            f"({sample.summary()})")
    changes = 0
    rises = 0
    for node_id, first in sorted(before.nodes.items()):
        last = after.nodes.get(node_id)
        if (last is None or last.incarnation != first.incarnation
                or last.leadership_changes < first.leadership_changes):
            continue  # not answering now, or restarted (its counts began again)
        changes = max(changes, last.leadership_changes - first.leadership_changes)
        rises = max(rises, last.term_increments - first.term_increments)
        if (last.leader_id, last.epoch) != (first.leader_id, first.epoch):
            problems.append(f"node {node_id} saw leader {first.leader_id} at term "
                            f"{first.epoch}, then leader {last.leader_id} at term {last.epoch}")
    if changes or rises:
        problems.insert(0, f"{changes} leadership change(s) and a term {rises} higher")
    return "; ".join(problems) if problems else None


LEADER_LINE = re.compile(r"the leader is node (\S+) at Raft term (\d+)")
"""What a controller logs each time it sees a new leader (``controller/raft/node.py``)."""


def leaderships_in_logs(paths: Iterable[Path]) -> set[tuple[str, int]]:
    """Every (leader, term) the controllers logged as a new leader: one per election that
    produced a leader, however many nodes saw it, across restarts (the logs are appended)."""
    seen: set[tuple[str, int]] = set()
    for path in paths:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        seen.update((leader, int(term)) for leader, term in LEADER_LINE.findall(text))
    return seen


class AdminWriter(threading.Thread):
    """Steady admin writes to one quorum, the load a steady-leader check runs under: a topic
    ``<prefix>-<n>`` created (1 partition, RF 3), then its ``retention.ms`` altered, in turn, at
    ``rate`` writes/s, until :attr:`stopping` is set (at most ``max_writes``). Counts what
    succeeded in :attr:`done` and keeps each failure's text in :attr:`failed`."""

    def __init__(self, urls: Sequence[str], token: str, prefix: str, rate: float, *,
                 max_writes: int = 1_000_000) -> None:
        super().__init__(name=f"writer-{prefix}", daemon=True)
        self.urls, self.token, self.prefix = list(urls), token, prefix
        self.interval = 1.0 / rate
        self.max_writes = max_writes
        self.stopping = threading.Event()
        self.done = 0
        self.failed: list[str] = []

    def run(self) -> None:
        with AdminClient(self.urls, CommandConfig(token=self.token), timeout=10.0,
                         retry_for=10.0) as admin:
            next_at = time.monotonic()
            for count in range(self.max_writes):
                if self.stopping.is_set():
                    return
                name = f"{self.prefix}-{count // 2}"
                try:
                    if count % 2 == 0:
                        admin.create_topic(name, 1, 3)
                    else:
                        admin.set_config("topics", name, "retention.ms", "86400000")
                    self.done += 1
                except AdminError as error:
                    self.failed.append(f"{name}: {error}")
                next_at += self.interval
                self.stopping.wait(max(next_at - time.monotonic(), 0.0))
