"""The campaign's verdict on a run and its summary, from histories written by hand."""

from __future__ import annotations

import pytest

from chunkraft.chaos.campaign import CampaignOptions, RunResult, _judge, _summary, main
from chunkraft.chaos.history import CreateTopic, CutChunk, Describe
from chunkraft.chaos.history import TopicView as V

from .helpers import H

OPTIONS = CampaignOptions(check_seconds=10.0)
CREATE = CreateTopic("a", 1, 2)


def judged(h: H, **fields: object) -> RunResult:
    result = RunResult(0, 1, hashes_equal=True)
    for name, value in fields.items():
        setattr(result, name, value)
    _judge(result, h.ops, OPTIONS)
    return result


def test_a_clean_run_passes() -> None:
    h = (H().ok(1, CREATE, 0, 10, "id-a").ok(1, CutChunk("a", 0, 5, (1, 2)), 20, 30)
         .ok(2, Describe("a"), 40, 50, V("id-a", 1, (((0, None), (5, (1, 2))),)))
         .ok("final-0", Describe("a"), 100, 110, V("id-a", 1, (((0, None), (5, (1, 2))),))))
    result = judged(h)
    assert not result.failed, result.explain
    assert (result.linearizable, result.writes_with_final_reads) == ("valid", "valid")
    assert result.operations == 3 and result.checked == 4


def test_a_lost_write_fails_the_run_even_when_no_client_read_it() -> None:
    # No client read after the cut: only the final read, linearizable, can show the loss.
    h = (H().ok(1, CREATE, 0, 10, "id-a").ok(1, CutChunk("a", 0, 5, (1, 2)), 20, 30)
         .ok("final-0", Describe("a"), 100, 110, V("id-a", 1, (((0, None),),))))
    result = judged(h)
    assert result.failed
    assert result.writes_with_final_reads == "violation"
    assert result.tally["lost"] == 1
    assert "no linearization" in result.explain


def test_a_stale_read_of_its_own_write_fails_the_run() -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok(1, Describe("a"), 20, 30, None)
    result = judged(h)
    assert result.linearizable == "violation" and result.failed


@pytest.mark.parametrize("field", ["hashes_equal", "minority_acks", "error"])
def test_other_findings_fail_the_run(field: str) -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok("final-0", Describe("a"), 100, 110,
                                             V("id-a", 1, (((0, None),),)))
    value = {"hashes_equal": False, "minority_acks": 1, "error": "boom"}[field]
    assert judged(h, **{field: value}).failed


def test_the_summary_adds_runs_up() -> None:
    a = RunResult(0, 1, operations=10, checked=9, outcomes={"ok": 8}, faults={"kill": 1},
                  linearizable="valid", writes_with_final_reads="valid", hashes_equal=True,
                  tally={"lost": 0, "phantoms": 0, "diverged": 0},
                  leader_cut_recovery_s=[1.0, None], leader_cut_write_available_s=[0.5, 0.7])
    b = RunResult(1, 2, operations=5, checked=5, outcomes={"ok": 5}, faults={"kill": 2},
                  linearizable="violation", writes_with_final_reads="valid",
                  hashes_equal=True, tally={"lost": 1}, leader_cut_recovery_s=[3.0],
                  leader_cut_write_available_s=[None])
    summary = _summary([a, b])
    assert summary["failed_runs"] == [1]
    assert summary["operations"] == 15 and summary["operations_checked"] == 14
    assert summary["faults_injected"] == {"kill": 3}
    assert summary["violations"] == 1 and summary["lost"] == 1
    assert summary["leader_cut_recovery_median_s"] == 2.0
    assert summary["leader_cuts_not_recovered_before_heal"] == 1
    assert summary["leader_cut_write_available_median_s"] == 0.6
    assert summary["leader_cut_write_available_max_s"] == 0.7
    assert summary["leader_cuts_unavailable_past_fault"] == 1


@pytest.mark.parametrize("argv", [["--faults", "meteor"], ["--runs", "0"],
                                  ["--seconds", "5"], ["--faults", ""]])
def test_bad_flags_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "error" in capsys.readouterr().err


def test_the_schedule_meets_every_fault_once_even_when_time_is_up() -> None:
    import random
    import time

    from chunkraft.chaos.campaign import _schedule
    options = CampaignOptions(faults=("kill", "loss", "pause"), fault_seconds=0.0,
                              quiet_seconds=0.0)
    names = list(_schedule(options, random.Random(3), time.monotonic() - 1))
    assert sorted(names) == ["kill", "loss", "pause"]
    more = list(_schedule(options, random.Random(3), time.monotonic() + 0.05))
    assert len(more) > 3 and set(more) == {"kill", "loss", "pause"}
