"""Lost, phantom and diverged writes, and availability, from histories with final reads."""

from __future__ import annotations

from chunkraft.chaos.history import CreatePartitions, CreateTopic, CutChunk, Describe
from chunkraft.chaos.history import TopicView as V
from chunkraft.chaos.verdict import final_views, median_or_none, recovery_seconds, tally

from .helpers import H

CREATE = CreateTopic("a", 2, 2)
READ = Describe("a")


def view(partitions: int = 2, chunks: tuple[tuple[int, ...], ...] | None = None,
         topic_id: str = "id-a") -> V:
    starts = chunks or tuple((0,) for _ in range(partitions))
    return V(topic_id, partitions, tuple(tuple((s, None) for s in p) for p in starts))


def test_a_history_whose_final_reads_show_every_acknowledged_write_is_clean() -> None:
    h = (H().ok(1, CREATE, 0, 10, "id-a")
         .ok(1, CutChunk("a", 0, 5, (1, 2)), 20, 30)
         .ok(2, CreatePartitions("a", 3), 40, 50)
         .ok("final-0", READ, 100, 110, view(3, ((0, 5), (0,), (0,))))
         .ok("final-1", READ, 100, 110, view(3, ((0, 5), (0,), (0,)))))
    found = tally(h.ops)
    assert found.clean, found
    assert set(final_views(h.ops)["a"]) == {"final-0", "final-1"}


def test_an_acknowledged_create_missing_after_the_heal_is_lost() -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok("final-0", READ, 100, 110, None)
    found = tally(h.ops)
    assert len(found.lost) == 1 and "topic missing" in found.lost[0]


def test_a_topic_with_another_id_than_the_create_answered_is_lost() -> None:
    h = H().ok(1, CREATE, 0, 10, "id-a").ok("final-0", READ, 100, 110, view(topic_id="id-b"))
    assert "id-b" in tally(h.ops).lost[0]


def test_an_acknowledged_cut_and_partition_count_must_show() -> None:
    h = (H().ok(1, CREATE, 0, 10, "id-a")
         .ok(1, CutChunk("a", 1, 7, (1, 2)), 20, 30)
         .ok(1, CreatePartitions("a", 4), 40, 50)
         .ok("final-0", READ, 100, 110, view(2)))
    lost = tally(h.ops).lost
    assert len(lost) == 2
    assert any("no chunk at 7" in line for line in lost)
    assert any("2 partition(s)" in line for line in lost)


def test_what_nobody_asked_for_is_a_phantom() -> None:
    h = (H().ok(1, CREATE, 0, 10, "id-a")
         .fail(1, CutChunk("a", 0, 9, (1, 2)), 20, 30, "INVALID_REQUEST")
         .ok("final-0", READ, 100, 110, view(5, ((0, 9), (0,), (0,), (0,), (0,))))
         .ok("final-0", Describe("b"), 100, 110, view(topic_id="id-b")))
    phantoms = tally(h.ops).phantoms
    assert any("chunk at 9 nobody cut" in line for line in phantoms)
    assert any("5 partition(s), never requested" in line for line in phantoms)
    assert any(line.startswith("b ") and "no create" in line for line in phantoms)


def test_an_unknown_outcome_may_have_happened_so_it_is_no_phantom() -> None:
    h = (H().ok(1, CREATE, 0, 10, "id-a").info(2, CutChunk("a", 0, 9, (1, 2)), 20)
         .ok("final-0", READ, 100, 110, view(2, ((0, 9), (0,)))))
    assert tally(h.ops).clean


def test_controllers_that_disagree_after_the_heal_diverged() -> None:
    h = (H().ok(1, CREATE, 0, 10, "id-a")
         .ok("final-0", READ, 100, 110, view(2))
         .ok("final-1", READ, 100, 110, view(2, ((0,), (0,)), topic_id="id-a"))
         .ok("final-2", READ, 100, 110, view(3)))
    found = tally(h.ops)
    assert len(found.diverged) == 1 and found.diverged[0].startswith("a:")


def test_recovery_is_the_first_write_invoked_after_the_cut_and_acknowledged_before_the_heal(
) -> None:
    s = 1_000_000_000
    h = (H().ok(1, CREATE, 0, 2 * s, "id-a")              # invoked before the cut: not counted
         .ok(2, READ, 3 * s, 3 * s + 10, None)            # a read: not counted
         .ok(3, CreatePartitions("a", 3), 3 * s, 4 * s + s // 2)
         .ok(4, CreatePartitions("a", 4), 5 * s, 6 * s))
    assert recovery_seconds(h.ops, [s], [10 * s]) == [3.5]
    assert recovery_seconds(h.ops, [s], [4 * s]) == [None]   # nothing before the heal
    assert median_or_none([None, 1.0, 3.0, 2.0]) == 2.0
    assert median_or_none([None]) is None
