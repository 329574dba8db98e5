"""The nemesis campaign: ``python -m chunkraft.chaos.campaign --runs N --seconds S``.

Each run builds its own hosts (network namespaces, :mod:`chunkraft.chaos.netns`): three
controllers, each on a host of its own with its data directory on a power-cut filesystem
(:mod:`chunkraft.chaos.power`) when ``power`` is among the faults, and one client host. It
starts the workload there (:mod:`chunkraft.chaos.workload`), runs the nemesis's faults in turns
(:mod:`chunkraft.chaos.nemesis`) while it runs, heals everything, reads every topic from every
controller, then decides:

- the writes are linearizable, and the reads keep docs/api.md's read-your-writes promise
  (:mod:`chunkraft.chaos.linearizability`);
- the writes with the final reads alone are linearizable (nothing acknowledged was lost or
  applied twice), and the plain counts agree (:mod:`chunkraft.chaos.verdict`);
- all controllers reach the same offset with the same image hash;
- no write sent to a minority was acknowledged.

It prints one JSON line per run and a summary line, keeps each failing run's history, fault
log and controller logs under ``--out``, and exits 1 if any run failed. Needs root, iproute2,
nftables (loss), iptables (delay) and FUSE (power); see docs/chaos.md.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkraft.chaos.faults import NetworkFaults
from chunkraft.chaos.history import read_history
from chunkraft.chaos.linearizability import ReadLevel, Verdict, check
from chunkraft.chaos.nemesis import ALL_FAULTS, Nemesis, PowerCut
from chunkraft.chaos.netns import Hosts
from chunkraft.chaos.netns_cluster import NetnsCluster
from chunkraft.chaos.power import PowerSupply, clean_leftovers
from chunkraft.chaos.verdict import (
    FINAL_PREFIX,
    median_or_none,
    recovery_seconds,
    summarize,
    tally,
)
from chunkraft.chaos.workload import WorkloadConfig

__all__ = ["CampaignOptions", "RunResult", "main", "run_campaign", "run_once"]

CONTROLLERS = 3
CLIENT_HOST = CONTROLLERS  # the host after the controllers: clients and observer
MAX_STRETCH = 4
"""The workload stops when the nemesis is done; it gives up by itself after this many times
the run's seconds (a nemesis that hangs must not keep it running for ever)."""


@dataclass(frozen=True)
class CampaignOptions:
    """How a campaign runs (the command's flags)."""

    runs: int = 1
    seconds: float = 60.0
    faults: tuple[str, ...] = ALL_FAULTS
    fault_seconds: float = 3.0
    quiet_seconds: float = 1.5
    clients: int = 4
    seed: int = 1
    out: Path = Path("chaos-out")
    keep: bool = False
    check_seconds: float = 120.0


@dataclass
class RunResult:
    """One run's findings; ``failed`` is the verdict of the run."""

    run: int
    seed: int
    operations: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    linearizable: str = "unknown"
    writes_with_final_reads: str = "unknown"
    checked: int = 0
    tally: dict[str, Any] = field(default_factory=dict)
    hashes_equal: bool = False
    offset: int | None = None
    minority_acks: int = 0
    leader_cut_recovery_s: list[float | None] = field(default_factory=list)
    """Per leader cut: the workload's clients' first write acknowledged after it."""
    leader_cut_write_available_s: list[float | None] = field(default_factory=list)
    """Per leader cut: the nemesis's own probe of the majority (etcd's failover measure)."""
    error: str | None = None
    seconds: float = 0.0
    explain: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.error or self.linearizable != "valid"
                    or self.writes_with_final_reads != "valid"
                    or self.tally.get("lost") or self.tally.get("phantoms")
                    or self.tally.get("diverged") or not self.hashes_equal
                    or self.minority_acks)

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in vars(self).items() if k != "explain"}
        data["failed"] = self.failed
        return data


def _election_timeout_s(cluster: NetnsCluster) -> float:
    value = cluster.extra_properties.get("raft.election.timeout.max.ms", "500")
    return int(value) / 1000


def _converged_hashes(cluster: NetnsCluster, timeout: float = 30.0
                      ) -> tuple[bool, int | None, dict[int, Any]]:
    """Waits (bounded) until every controller reports the same offset, then compares their
    image hashes: ``(equal, offset, last answers)``."""
    deadline = time.monotonic() + timeout
    answers: dict[int, Any] = {}
    for _ in range(int(timeout / 0.25) + 1):
        answers = cluster.statuses(with_hash=True)
        offsets = {a.get("metadata_offset") if a else None for a in answers.values()}
        if len(offsets) == 1 and None not in offsets:
            hashes = {a["image_hash"] for a in answers.values() if a}
            return len(hashes) == 1, offsets.pop(), answers
        if time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    return False, None, answers


def _schedule(options: CampaignOptions, rng: random.Random, ends: float) -> Iterator[str]:
    """The faults of one run: every chosen fault once, in a seeded shuffle, then more turns
    (reshuffled) while the run's ``seconds`` last; a quiet period before each."""
    order = list(options.faults)
    rng.shuffle(order)
    yield from _quietly(order, options)
    for _turn in range(10_000):
        if time.monotonic() + options.quiet_seconds + options.fault_seconds > ends:
            return
        rng.shuffle(order)
        for name in _quietly(order, options):
            yield name
            if time.monotonic() + options.quiet_seconds + options.fault_seconds > ends:
                return


def _quietly(order: Sequence[str], options: CampaignOptions) -> Iterator[str]:
    for name in order:
        time.sleep(options.quiet_seconds)
        yield name


def run_once(options: CampaignOptions, index: int, base: Path,
             log: Callable[[str], None]) -> RunResult:
    """One run of the campaign under ``base`` (module doc)."""
    seed = options.seed * 1000 + index
    result = RunResult(index, seed)
    started = time.monotonic()
    rng = random.Random(seed)
    history = base / "history.jsonl"
    with ExitStack() as stack:
        hosts = stack.enter_context(Hosts(CONTROLLERS + 1))
        cluster = NetnsCluster(base / "cluster", size=CONTROLLERS, hosts=hosts,
                               observer=CLIENT_HOST)
        cluster.prepare()
        power: PowerCut | None = None
        if "power" in options.faults:
            supply = stack.enter_context(PowerSupply(cluster, base / "power"))
            power = supply
        stack.callback(cluster.stop)
        cluster.start()
        cluster.wait_ready(timeout=60)
        faults = NetworkFaults(hosts)
        stack.callback(faults.heal_all)
        nemesis = Nemesis(cluster, faults, power, rng,
                          election_timeout_s=_election_timeout_s(cluster), log=log)
        stop_file = base / "workload.stop"
        config = WorkloadConfig(
            urls=tuple(node.url for node in cluster.nodes.values()),
            token=cluster.admin_token, cluster_id=cluster.cluster_id, history=str(history),
            seconds=options.seconds * MAX_STRETCH, clients=options.clients, seed=seed,
            run=f"r{index}", stop_file=str(stop_file))
        config_path = base / "workload.json"
        config_path.write_text(config.to_json(), encoding="utf-8")
        with (base / "workload.log").open("ab") as workload_log:
            workload = hosts.popen(CLIENT_HOST, [sys.executable, "-m",
                                                 "chunkraft.chaos.workload", str(config_path)],
                                   stdout=workload_log, stderr=subprocess.STDOUT)
        for name in _schedule(options, rng, time.monotonic() + options.seconds):
            nemesis.run_fault(name, options.fault_seconds)
            result.faults[name] = result.faults.get(name, 0) + 1
            # A fault that stopped controllers restarted them; let them find a leader.
            nemesis.heal_everything(timeout=60)
        time.sleep(options.quiet_seconds)
        stop_file.touch()
        try:
            workload.wait(timeout=60)
        except subprocess.TimeoutExpired:
            workload.kill()
            result.error = "the workload did not finish in time"
        nemesis.heal_everything(timeout=60)
        status = cluster.statuses()
        offsets = [a.get("metadata_offset", -1) for a in status.values() if a]
        min_offset = max(offsets) if offsets else -1
        topics = sorted({o.op.topic for o in read_history(history)})
        final_path = base / "final.json"
        final_path.write_text(json.dumps({"topics": topics, "min_offset": min_offset}))
        hosts.run(CLIENT_HOST, [sys.executable, "-m", "chunkraft.chaos.workload",
                                str(config_path), "--final", str(final_path)],
                  timeout=60 + 3 * len(topics))
        result.hashes_equal, result.offset, _ = _converged_hashes(cluster)
        result.minority_acks = len(nemesis.minority_acks)
        (base / "faults.jsonl").write_text(
            "".join(json.dumps(e.to_json()) + "\n" for e in nemesis.events))
        cuts = [e for e in nemesis.events if e.fault == "partition"]
        ops = read_history(history)
        result.leader_cut_write_available_s = [e.details.get("write_available_s")
                                               for e in cuts]
        result.leader_cut_recovery_s = recovery_seconds(
            ops, [int(e.details.get("cut_at", e.start)) for e in cuts], [e.heal for e in cuts])
    _judge(result, ops, options)
    result.seconds = round(time.monotonic() - started, 1)
    return result


def _judge(result: RunResult, ops: Sequence[Any], options: CampaignOptions) -> None:
    result.operations = sum(1 for o in ops if not str(o.process).startswith(FINAL_PREFIX))
    for o in ops:
        result.outcomes[o.outcome] = result.outcomes.get(o.outcome, 0) + 1
    full = check(ops, ReadLevel.READ_YOUR_WRITES, time_limit=options.check_seconds)
    result.linearizable = full.verdict.value
    result.checked = full.operations
    # Writes and the final reads alone, reads linearizable: every acknowledged write must be
    # in the state every controller shows after the heal, and none may be there twice.
    finals = [o for o in ops if type(o.op).__name__ != "Describe"
              or str(o.process).startswith(FINAL_PREFIX)]
    final = check(finals, ReadLevel.LINEARIZABLE, time_limit=options.check_seconds)
    result.writes_with_final_reads = final.verdict.value
    result.tally = summarize(tally(ops))
    if full.verdict is not Verdict.VALID:
        result.explain += full.explain() + "\n"
    if final.verdict is not Verdict.VALID:
        result.explain += final.explain() + "\n"


def run_campaign(options: CampaignOptions, *, print_line: Callable[[str], None] = print
                 ) -> int:
    """Runs ``options.runs`` runs; returns the exit status (1 if any run failed)."""
    options.out.mkdir(parents=True, exist_ok=True)
    results: list[RunResult] = []
    for index in range(options.runs):
        base = options.out / f"run-{index:03d}"
        if base.exists():
            clean_leftovers()  # mounts a killed campaign left under an old run
            shutil.rmtree(base)
        base.mkdir(parents=True)
        lines: list[str] = []
        try:
            result = run_once(options, index, base, lines.append)
        except Exception as error:  # a harness failure is a failed run, reported as such
            result = RunResult(index, options.seed * 1000 + index,
                               error=f"{type(error).__name__}: {error}")
        (base / "nemesis.log").write_text("\n".join(lines) + "\n")
        if result.explain:
            (base / "violations.txt").write_text(result.explain)
        print_line(json.dumps(result.to_json()))
        results.append(result)
        if not result.failed and not options.keep:
            shutil.rmtree(base, ignore_errors=True)
    print_line(json.dumps(_summary(results)))
    return 1 if any(r.failed for r in results) else 0


def _summary(results: Sequence[RunResult]) -> dict[str, Any]:
    faults: dict[str, int] = {}
    for r in results:
        for name, count in r.faults.items():
            faults[name] = faults.get(name, 0) + count
    recoveries = [v for r in results for v in r.leader_cut_recovery_s]
    available = [v for r in results for v in r.leader_cut_write_available_s]
    return {
        "summary": True,
        "runs": len(results),
        "failed_runs": [r.run for r in results if r.failed],
        "operations": sum(r.operations for r in results),
        "operations_checked": sum(r.checked for r in results),
        "ok": sum(r.outcomes.get("ok", 0) for r in results),
        "info": sum(r.outcomes.get("info", 0) for r in results),
        "faults_injected": faults,
        "violations": sum(1 for r in results if r.linearizable == "violation"
                          or r.writes_with_final_reads == "violation"),
        "lost": sum(r.tally.get("lost", 0) for r in results),
        "phantoms": sum(r.tally.get("phantoms", 0) for r in results),
        "minority_acks": sum(r.minority_acks for r in results),
        "hash_mismatches": sum(1 for r in results if not r.hashes_equal),
        "leader_cut_recovery_median_s": median_or_none(recoveries),
        "leader_cuts_not_recovered_before_heal": sum(1 for v in recoveries if v is None),
        "leader_cut_write_available_median_s": median_or_none(available),
        "leader_cut_write_available_max_s": max((v for v in available if v is not None),
                                                default=None),
        "leader_cuts_unavailable_past_fault": sum(1 for v in available if v is None),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chunkraft.chaos.campaign",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=1, help="runs, each on new hosts (1-1000)")
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="workload seconds per run (10-3600)")
    parser.add_argument("--faults", default=",".join(ALL_FAULTS),
                        help=f"comma-separated, from {','.join(ALL_FAULTS)}")
    parser.add_argument("--fault-seconds", type=float, default=3.0,
                        help="how long each fault lasts before its heal")
    parser.add_argument("--quiet-seconds", type=float, default=1.5,
                        help="how long the cluster runs unharmed between faults")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("chaos-out"))
    parser.add_argument("--keep", action="store_true", help="keep passing runs' files too")
    args = parser.parse_args(argv)
    faults = tuple(f for f in args.faults.split(",") if f)
    unknown = sorted(set(faults) - set(ALL_FAULTS))
    if unknown or not faults:
        parser.error(f"unknown faults {unknown}; choose from {','.join(ALL_FAULTS)}")
    if not 1 <= args.runs <= 1000 or not 10 <= args.seconds <= 3600:
        parser.error("--runs must be 1-1000 and --seconds 10-3600")
    options = CampaignOptions(args.runs, args.seconds, faults, args.fault_seconds,
                              args.quiet_seconds, args.clients, args.seed, args.out, args.keep)
    # SIGTERM unwinds like Ctrl-C, so the run's clean-up (processes by PID, mounts,
    # namespaces) happens instead of leaving them behind.
    signal.signal(signal.SIGTERM, _terminate)
    return run_campaign(options, print_line=lambda line: print(line, flush=True))


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
