"""Who learns that a transaction marker reached a partition on this broker (the group
coordinator: a transaction's offsets in ``__consumer_offsets`` become visible, or are dropped,
when its marker lands there).

Listeners are registered per ReplicaManager (one per broker; tests run several in one process)
with :func:`add_marker_listener`. :func:`markers_written` is called with each WriteTxnMarkers
request and its answer once the markers are replicated: by the ``write-txn-markers`` route, and
by the transaction coordinator when it writes a marker on a partition it leads itself. Each
listener is called once per partition whose marker succeeded, in request order, with
``(topic, partition, producer_id, producer_epoch, committed)``; a listener may be a coroutine
function. A failing listener is logged and does not stop the others.
"""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable

from chunkraft.protocol.data_plane import WriteTxnMarkersRequest, WriteTxnMarkersResponse

__all__ = ["MarkerListener", "add_marker_listener", "markers_written", "remove_marker_listener"]

log = logging.getLogger(__name__)

MarkerListener = Callable[[str, int, int, int, bool], Awaitable[None] | None]
"""``(topic, partition, producer_id, producer_epoch, committed)``."""

_listeners: weakref.WeakKeyDictionary[object, list[MarkerListener]] = (
    weakref.WeakKeyDictionary())


def add_marker_listener(replica_manager: object, listener: MarkerListener) -> None:
    """Calls ``listener`` for every marker written through ``replica_manager`` from now on."""
    _listeners.setdefault(replica_manager, []).append(listener)


def remove_marker_listener(replica_manager: object, listener: MarkerListener) -> None:
    listeners = _listeners.get(replica_manager, [])
    if listener in listeners:
        listeners.remove(listener)


async def markers_written(replica_manager: object, request: WriteTxnMarkersRequest,
                          response: WriteTxnMarkersResponse) -> None:
    """Tells the listeners of ``replica_manager`` about each successful marker of
    ``response`` (the answer to ``request``)."""
    try:
        listeners = _listeners.get(replica_manager)
    except TypeError:  # an unhashable stand-in (tests): nobody can have registered with it
        return
    if not listeners:
        return
    for marker, result in zip(request.markers, response.markers, strict=False):
        for topic in result.topics:
            for partition in topic.partitions:
                if partition.error_code != 0:
                    continue
                for listener in list(listeners):
                    try:
                        outcome = listener(topic.name, partition.partition_index,
                                           marker.producer_id, marker.producer_epoch,
                                           marker.transaction_result)
                        if inspect.isawaitable(outcome):
                            await outcome
                    except Exception:
                        log.exception("a transaction marker listener failed")
