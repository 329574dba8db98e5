"""Term range: a Raft message carrying a term no epoch can hold is dropped, never adopted.

The Raft term is chunkraft's KRaft epoch, an int32 in every batch (``entry.py``). pysyncobj's
terms are unbounded Python ints, and a node adopts any higher term it hears of: once, one
flipped byte in a follower's journal became term 71776119061217291, spread to the whole quorum
in one election, and from then on no leader could encode its barrier (``struct.error``, HTTP
500 on every write). Raft gives no way back from a term once adopted, so the range is enforced
where terms enter: at start (``journal_check.py``) and here, on every message before pysyncobj
reads it.

:func:`out_of_range_term` names the first term of a message outside 0..:data:`~.entry.MAX_EPOCH`
(``term``, ``last_log_term``, ``prevLogTerm``, ``log_term``, and the term of every entry it
carries); ``durable_syncobj.DurableSyncObj`` drops such a message and logs it. Pure, no state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chunkraft.controller.raft.entry import MAX_EPOCH

__all__ = ["out_of_range_term", "term_in_range"]

# Every field of pysyncobj 0.3.17's messages that holds a term (syncobj.py).
_TERM_FIELDS = ("term", "last_log_term", "prevLogTerm", "log_term")


def term_in_range(term: object) -> bool:
    """True if ``term`` is an int (not a bool) in 0..MAX_EPOCH."""
    return type(term) is int and 0 <= term <= MAX_EPOCH


def out_of_range_term(message: object, entries: Iterable[Any] = ()) -> str | None:
    """Why ``message`` must be dropped (its first out-of-range term), or None if it may pass.

    ``entries`` are entries the message completes but does not hold itself (the pieces of a
    large entry pysyncobj sends in parts), checked like ``message["entries"]``.
    """
    if not isinstance(message, dict):
        return None  # not a Raft message this module judges; pysyncobj's own checks apply
    for name in _TERM_FIELDS:
        if name in message and not term_in_range(message[name]):
            return f"{name} {message[name]!r} is outside 0..{MAX_EPOCH}"
    carried = message.get("entries")
    for source in (carried if isinstance(carried, list | tuple) else (), entries):
        for entry in source:
            # pysyncobj's entry: (command, index, term).
            if not (isinstance(entry, tuple | list) and len(entry) == 3
                    and term_in_range(entry[2])):
                index = entry[1] if isinstance(entry, tuple | list) and len(entry) == 3 else "?"
                term = entry[2] if isinstance(entry, tuple | list) and len(entry) == 3 else entry
                return f"the entry of index {index} has term {term!r}, outside 0..{MAX_EPOCH}"
    return None
