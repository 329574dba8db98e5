"""random_bytes: the operating system's random bytes, read 4 KiB at a time.

``os.urandom`` gives up the GIL for its system call, and getting the GIL back waits for
whichever thread holds it: up to a switch interval (5 ms), about 0.9 ms on average with one busy
thread beside it on this machine (``uuid.uuid4()`` went from 1.8 us alone to 893 us). A
controller's loop drew 16 bytes per created topic (its id) that way while the Raft thread was
busy beside it (as a profile showed). One read of 4 KiB serves 256 such draws. The bytes are the
same kernel CSPRNG's, handed out once each; a forked child starts with an empty pool, so parent
and child never hand out the same bytes.
"""

from __future__ import annotations

import os
import threading

__all__ = ["random_bytes"]

_CHUNK = 4096

_lock = threading.Lock()
_pool = bytearray()


def random_bytes(count: int) -> bytes:
    """``count`` random bytes from the kernel's CSPRNG (as ``os.urandom``), each used once."""
    if count <= 0 or count > _CHUNK // 4:
        return os.urandom(count) if count > 0 else b""
    with _lock:
        if len(_pool) < count:
            _pool[:] = os.urandom(_CHUNK)
        taken = bytes(_pool[-count:])
        del _pool[-count:]
    return taken


def _empty_pool_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # a fork copies the lock in whatever state another thread had it
    _pool.clear()


os.register_at_fork(after_in_child=_empty_pool_after_fork)
