"""Where a Raft node's committed entries go: the image host.

The Raft node (``node.py``) replicates and commits entries; whatever holds the metadata image
applies them, writes the dumps pysyncobj asks for (the image is where the dump is made) and
loads the dumps pysyncobj hands back. Two hosts exist:

- :class:`InProcessImageHost` here: the state machine in the Raft node's own process (the
  embedded mode, and every test of the node alone);
- ``process_host.ChannelImageHost``: the Raft node in a process of its own, shipping each
  entry to the API process, which holds the image (``docs/architecture.md``, "The Raft
  process").

The node calls a host only from pysyncobj's tick thread, so a host must answer at once: a dump
is written by another thread (or process) and polled with :meth:`ImageHost.dump_written`.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from chunkraft.controller.image.controllers import ControllersImage
from chunkraft.controller.raft.dump import read_dump, write_dump
from chunkraft.controller.raft.state_machine import BatchOutcome, MetadataStateMachine

__all__ = ["DumpRequest", "DumpWritten", "ImageHost", "InProcessImageHost", "write_requested_dump"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DumpRequest:
    """pysyncobj asked for a dump of the state after ``last_entry`` (the last applied Raft
    entry), to be written whole and fsynced at ``target``."""

    last_entry: tuple[Any, ...]
    previous_entry: tuple[Any, ...]
    members: tuple[str, ...]
    member_ids: dict[str, int]
    target: Path


@dataclass(frozen=True, slots=True)
class DumpWritten:
    """A dump written whole at its request's target: the image's offset and epoch."""

    offset: int
    epoch: int


class ImageHost(Protocol):
    """What a Raft node hands its committed entries to; every call comes from the tick thread
    and returns at once."""

    def apply(self, payload: bytes) -> Any:
        """Applies (or ships) one committed entry; the result goes to the proposer's callback."""

    def begin_dump(self, request: DumpRequest) -> bool:
        """Starts writing the dump of the image as of the last entry applied; False: it cannot
        be written (the image stopped at a corrupt entry)."""

    def dump_written(self) -> DumpWritten | bool | None:
        """None while the dump is being written; then the :class:`DumpWritten`, or False."""

    def restore(self, path: Path) -> None:
        """Replaces the image with the dump at ``path`` (checked whole; raises if it is not)."""

    def controllers(self) -> ControllersImage:
        """The controllers' registrations in the image (the voter directory reads them)."""

    def failure(self) -> str | None:
        """Why the image stopped applying, if it did."""

    def mark_failed(self, why: str) -> None:
        """Stops the image: a dump handed over by pysyncobj cannot be loaded."""

    def high_watermark(self) -> int:
        """The metadata offset after the last record applied."""


def write_requested_dump(request: DumpRequest, *, state_machine: MetadataStateMachine,
                         cluster_id: uuid.UUID,
                         on_done: Callable[[DumpWritten | bool], None] | None = None,
                         ) -> threading.Thread | None:
    """Captures the image and the idempotency keys now (they match ``request.last_entry``
    because the caller applies in Raft order) and writes them to ``request.target`` in a
    thread; None if the image stopped at a corrupt entry (a dump would claim every entry after
    it, and compaction would drop them). The thread's ``result`` is a DumpWritten or False,
    also handed to ``on_done`` (from the thread) once known."""
    if state_machine.failure is not None:
        return None
    image = state_machine.image
    keys = state_machine.idempotency_keys()

    def write() -> None:
        started = time.monotonic()
        try:
            write_dump(request.target, image=image, cluster_id=cluster_id, keys=keys,
                       last_entry=request.last_entry, previous_entry=request.previous_entry,
                       members=list(request.members), member_ids=request.member_ids)
        except Exception:
            logger.exception("writing the Raft dump failed; the journal is kept whole")
            request.target.unlink(missing_ok=True)
            thread.result = False
        else:
            logger.debug("the image at offset %d written to the next dump in %.2f s",
                         image.offset, time.monotonic() - started)
            thread.result = DumpWritten(image.offset, image.epoch)
        if on_done is not None:
            on_done(thread.result)

    thread = _DumpThread(write)
    thread.start()
    return thread


class _DumpThread(threading.Thread):
    def __init__(self, target: Any) -> None:
        super().__init__(target=target, name="chunkraft-dump", daemon=True)
        self.result: DumpWritten | bool | None = None


class InProcessImageHost:
    """The state machine in the Raft node's process: entries applied in the tick thread."""

    def __init__(self, state_machine: MetadataStateMachine, cluster_id: uuid.UUID) -> None:
        self.state_machine = state_machine
        self._cluster_id = cluster_id
        self._dump: _DumpThread | None = None
        self._dump_refused = False

    def apply(self, payload: bytes) -> tuple[BatchOutcome, ...]:
        return self.state_machine.apply_entry(payload)

    def begin_dump(self, request: DumpRequest,
                   on_done: Callable[[DumpWritten | bool], None] | None = None) -> bool:
        """Starts the dump (see the protocol); ``on_done`` hears its outcome, for a host that
        answers someone else rather than being polled."""
        thread = write_requested_dump(request, state_machine=self.state_machine,
                                      cluster_id=self._cluster_id, on_done=on_done)
        self._dump = thread if isinstance(thread, _DumpThread) else None
        return thread is not None

    def dump_written(self) -> DumpWritten | bool | None:
        thread = self._dump
        if thread is None:
            return False
        if thread.is_alive() or thread.result is None:
            return None
        self._dump = None
        return thread.result

    def restore(self, path: Path) -> None:
        try:
            header, image = read_dump(path)
        except Exception as error:
            self.state_machine.failure = f"the Raft dump cannot be loaded: {error}"
            logger.critical("%s", self.state_machine.failure)
            raise
        self.state_machine.restore(image, header.keys)
        gc.freeze()  # the image is long-lived and acyclic: keep it out of full collections
        logger.info("Raft dump loaded at offset %d", image.offset)

    def controllers(self) -> ControllersImage:
        return self.state_machine.image.controllers

    def failure(self) -> str | None:
        return self.state_machine.failure

    def mark_failed(self, why: str) -> None:
        self.state_machine.failure = why
        logger.critical("%s", why)

    def high_watermark(self) -> int:
        return self.state_machine.image.offset + 1
