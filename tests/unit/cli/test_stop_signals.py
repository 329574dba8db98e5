"""cli/stop_signals: the first SIGINT or SIGTERM stops the command, also a background job's
SIGINT; never in the middle of a deferred block or after the shutdown began."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest

from chunkraft.cli.stop_signals import Stopper, StopRequested


@pytest.fixture
def stopper() -> Iterator[Stopper]:
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's start
        yield Stopper()
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def test_the_stopper_takes_sigint_even_when_it_was_ignored(stopper: Stopper) -> None:
    stopper.install()
    with pytest.raises(StopRequested, match="SIGINT"):
        signal.raise_signal(signal.SIGINT)
        time.sleep(5)  # not reached: the handler raises as soon as the signal is handled
    signal.raise_signal(signal.SIGTERM)  # noted; one stop is enough
    assert stopper.signum == signal.SIGINT


def test_a_signal_in_a_deferred_block_raises_at_its_end(stopper: Stopper) -> None:
    stopper.install()
    finished = False
    with pytest.raises(StopRequested, match="SIGTERM"), stopper.deferred():
        signal.raise_signal(signal.SIGTERM)
        finished = True
    assert finished


def test_no_signal_raises_once_shielded(stopper: Stopper) -> None:
    stopper.install()
    stopper.shield()
    signal.raise_signal(signal.SIGTERM)
    signal.raise_signal(signal.SIGINT)
    assert stopper.signum == signal.SIGTERM
