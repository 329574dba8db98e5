"""Stopping a command that runs nodes on SIGINT or SIGTERM, whenever they come.

``chunkraft cluster`` and ``chunkraft demo`` start processes and serve until a signal; both
then stop every node they started. A background job of a non-interactive shell starts with
SIGINT ignored, so Python's KeyboardInterrupt never comes: the handler is installed explicitly.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

__all__ = ["StopRequested", "Stopper"]


class StopRequested(Exception):
    """SIGINT or SIGTERM arrived: stop every node, then exit 0."""


class Stopper:
    """The SIGINT and SIGTERM handler of ``chunkraft cluster`` and ``chunkraft demo``: the
    first signal raises :class:`StopRequested` in the main thread, wherever it waits (as
    Ctrl-C's KeyboardInterrupt would), unless a :meth:`deferred` block runs (then at its end)
    or :meth:`shield` was called (the shutdown has begun: a second signal must not interrupt
    it and orphan nodes).

    Installed explicitly for SIGINT too: a background job of a non-interactive shell starts with
    SIGINT ignored, and Python then installs no KeyboardInterrupt handler of its own. Main
    thread only (``signal.signal``'s rule)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._deferring = 0
        self._raised = False

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._handle)

    def shield(self) -> None:
        """From now on a signal is noted, never raised."""
        self._raised = True

    def _handle(self, signum: int, frame: object) -> None:
        if self.signum is None:
            self.signum = signum
        if self._deferring or self._raised:
            return
        self._raised = True
        raise StopRequested(signal.Signals(signum).name)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A block a signal must not cut in half (a fork whose Popen would be lost, so the
        child never stopped); a signal that came meanwhile raises when it ends."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if not self._deferring and self.signum is not None and not self._raised:
            self._raised = True
            raise StopRequested(signal.Signals(self.signum).name)
