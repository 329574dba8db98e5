"""The short nemesis campaign, as CI runs it: ``python -m chunkraft.chaos.campaign`` with every
fault (partition, halves, flap, 20 % loss, 200 ms delay, pause, kill -9, power cut) against
three controllers on network namespaces, each fault healed, then the history checked.

The long campaign (30 runs of 60 s) is a benchmark of its own: see bench/RESULTS.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from chunkraft.chaos.nemesis import ALL_FAULTS


def test_a_short_campaign_with_every_fault_finds_nothing_and_says_so(tmp_path: Path) -> None:
    assert os.geteuid() == 0, "the campaign needs root (namespaces, FUSE mounts)"
    for tool in ("ip", "nft", "iptables"):
        assert shutil.which(tool), f"the campaign needs {tool} (scripts/system-packages)"
    assert Path("/dev/fuse").exists(), "the power-cut fault needs FUSE (/dev/fuse)"
    out = tmp_path / "campaign"
    result = subprocess.run(
        [sys.executable, "-m", "chunkraft.chaos.campaign", "--runs", "1", "--seconds", "30",
         "--out", str(out), "--seed", "7"],
        capture_output=True, text=True, timeout=400)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0, (result.stdout[-4000:], result.stderr[-4000:],
                                    sorted(p.name for p in out.glob("run-*/*")))
    assert len(lines) == 2, result.stdout
    run, summary = lines
    assert summary["summary"] is True and summary["failed_runs"] == []
    # Every fault was met, and the run did real work under them.
    assert set(run["faults"]) == set(ALL_FAULTS), run["faults"]
    assert run["operations"] > 500 and run["outcomes"]["ok"] > 200, run
    assert run["linearizable"] == "valid" and run["writes_with_final_reads"] == "valid"
    assert run["tally"]["lost"] == 0 and run["tally"]["phantoms"] == 0
    assert run["hashes_equal"] is True and run["minority_acks"] == 0
    # The leader was cut off once and writes came back before the heal.
    assert [v for v in run["leader_cut_recovery_s"] if v is not None], run
    # A passing run leaves no files behind (failing ones keep their history).
    assert not list(out.glob("run-*"))
