"""How much parsing a JSON body may cost, bounded before any parser sees it.

A JSON parser (the standard library's or pydantic-core's) runs in C and holds the GIL for the
whole document: 8 MB of one million small arrays took 1.8 s in ``json.loads`` and 3.6 s in a
pydantic model here with other work running (0.57 s in ``json.loads`` on the idle machine),
and while one thread holds the GIL the Raft thread of the same process cannot send a heartbeat
(the election timeout is 0.2-0.5 s). The cost grows with the number of values, not the bytes
(8 MB of 1,000-character strings: 0.014 s in ``json.loads``). So a body is refused before
parsing when it may hold more values than a request can legitimately need.

:func:`json_value_bound` counts in one pass of ``bytes.count`` per character (memchr speed:
0.009-0.011 s for 8 MB here): every value but the first of a container follows a comma, and
every container opens with ``[`` or ``{``, so ``commas + containers + 1`` is never below the
number of values; commas and brackets inside strings only make it larger, never smaller.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_JSON_VALUES", "json_value_bound"]

DEFAULT_MAX_JSON_VALUES = 100_000
"""The values a body may hold (``request.max.json.values``). The largest legitimate requests
under the other limits: createPartitions with 10,000 RF-5 assignments (60,000 values: a list
and five ids each), 1,000 ACLs or topics of a batch (well under 10,000). Into the v3
createPartitions model on the idle machine (best of 5), the densest 1 MiB body (RF-3 lists,
520,000 values) parsed in 0.091 s and 100,000 values in 0.011 s."""


def json_value_bound(body: bytes) -> int:
    """An upper bound on the number of JSON values (and object members) in ``body``."""
    return body.count(b",") + body.count(b"[") + body.count(b"{") + 1
