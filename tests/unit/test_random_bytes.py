"""random_bytes: the kernel's random bytes from a pool, each handed out once, never twice
across a fork."""

from __future__ import annotations

import os

import pytest

from chunkraft import random_bytes as module
from chunkraft.random_bytes import random_bytes


def test_lengths_and_no_repeats_across_many_refills() -> None:
    drawn = [random_bytes(16) for _ in range(2_000)]  # about 8 refills of the pool
    assert all(len(value) == 16 for value in drawn)
    assert len(set(drawn)) == len(drawn)
    assert len(random_bytes(5_000)) == 5_000  # larger than the pool: read directly
    assert random_bytes(0) == b""


def test_the_pool_is_read_from_os_urandom_one_chunk_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = os.urandom

    def counting(count: int) -> bytes:
        reads.append(count)
        return real(count)

    monkeypatch.setattr(module.os, "urandom", counting)
    module._pool.clear()
    for _ in range(256):
        random_bytes(16)
    assert reads == [4096]


def test_a_forked_child_never_hands_out_the_parents_next_bytes() -> None:
    random_bytes(16)  # the pool now holds bytes the parent will hand out next
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write its next draw and leave at once
        os.write(writer, random_bytes(16))
        os._exit(0)
    os.close(writer)
    child = os.read(reader, 16)
    os.close(reader)
    os.waitpid(pid, 0)
    assert len(child) == 16 and child != random_bytes(16)
