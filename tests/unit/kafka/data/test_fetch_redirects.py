"""A connection's redirects: a client that comes back for the offset it was sent away from is
not redirected again for that partition."""

from __future__ import annotations

from chunkraft.kafka.data.fetch_redirects import FetchRedirects, redirects_of


def test_a_followed_redirect_keeps_the_partition_redirectable() -> None:
    memory = FetchRedirects()
    assert memory.not_to_redirect([("t", 0, 0)]) == frozenset()
    memory.answered("t", 0, 0, preferred=2)
    # The client went to broker 2 and came back further on: it follows redirects.
    assert memory.not_to_redirect([("t", 0, 10)]) == frozenset()
    memory.answered("t", 0, 10, preferred=3)
    assert memory.not_to_redirect([("t", 0, 20)]) == frozenset()


def test_asking_again_at_the_redirected_offset_sets_the_partition_aside_for_good() -> None:
    memory = FetchRedirects()
    memory.answered("t", 0, 5, preferred=2)
    memory.answered("t", 1, 5, preferred=2)
    assert memory.not_to_redirect([("t", 0, 5), ("t", 1, 6)]) == frozenset({("t", 0)})
    memory.answered("t", 0, 5, preferred=-1)  # served here (the leader read it for the client)
    assert memory.not_to_redirect([("t", 0, 9)]) == frozenset({("t", 0)})


def test_an_answer_served_here_forgets_the_redirect() -> None:
    memory = FetchRedirects()
    memory.answered("t", 0, 5, preferred=2)
    memory.answered("t", 0, 5, preferred=-1)
    assert memory.not_to_redirect([("t", 0, 5)]) == frozenset()


def test_memory_is_bounded_least_recent_first() -> None:
    memory = FetchRedirects(max_partitions=2)
    for partition in range(3):
        memory.answered("t", partition, 0, preferred=1)
    # Partition 0 was forgotten: asking at 0 again is not recognised as a redirect ignored.
    assert memory.not_to_redirect([("t", 0, 0), ("t", 1, 0), ("t", 2, 0)]) == frozenset(
        {("t", 1), ("t", 2)})
    memory.answered("t", 3, 0, preferred=1)
    assert memory.not_to_redirect([("t", 3, 0)]) == frozenset({("t", 3)})
    assert memory.not_to_redirect([("t", 1, 0), ("t", 2, 0)]) == frozenset({("t", 2)})


def test_one_memory_per_connection_in_its_extras() -> None:
    extras: dict[str, object] = {}
    first = redirects_of(extras)
    assert redirects_of(extras) is first
    assert redirects_of({}) is not first
