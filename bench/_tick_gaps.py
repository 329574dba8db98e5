"""The Raft thread's tick gaps as a controller exports them, and what a bench window saw.

A controller's ``GET /metrics`` holds ``chunkraft_raft_tick_gap_seconds``, the histogram of
every gap between two ticks of its Raft thread since it started (cumulative buckets, Prometheus'
text format). A window's gaps are the difference of two scrapes, :meth:`TickGaps.between`;
its p99 is estimated as Prometheus' ``histogram_quantile`` does (linear within the bucket the
rank falls in), so a bench figure and an operator's dashboard agree, and its max is the upper
bound of the highest bucket the window reached (a histogram knows no more).

An idle Raft thread waits in pysyncobj's poll for at most 50 ms, so no idle gap passes the 60 ms
bucket; under load the gaps are shorter. Values are immutable; nothing here is shared between
threads.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["METRIC", "TickGapWindow", "TickGaps", "TickGapsUnavailable", "parse_tick_gaps",
           "scrape_tick_gaps"]

METRIC = "chunkraft_raft_tick_gap_seconds"


class TickGapsUnavailable(RuntimeError):
    """The controller did not answer its metrics, or they hold no tick-gap histogram."""


@dataclass(frozen=True, slots=True)
class TickGaps:
    """One scrape of the histogram, or the difference of two (a window's gaps).

    ``bounds`` are the buckets' upper bounds in seconds, rising, ``inf`` last; ``cumulative``
    the count of gaps at most each bound (Prometheus' buckets, so the last is the count of all);
    ``sum_seconds`` the gaps' total.
    """

    bounds: tuple[float, ...]
    cumulative: tuple[int, ...]
    sum_seconds: float

    def __post_init__(self) -> None:
        if not self.bounds or self.bounds[-1] != math.inf:
            raise ValueError(f"the last bound must be +Inf: {self.bounds}")
        if len(self.bounds) != len(self.cumulative):
            raise ValueError(f"{len(self.cumulative)} counts for {len(self.bounds)} buckets")
        if list(self.bounds) != sorted(set(self.bounds)):
            raise ValueError(f"the bounds do not rise: {self.bounds}")
        if any(b < a for a, b in zip(self.cumulative, self.cumulative[1:], strict=False)):
            raise ValueError(f"the counts are not cumulative: {self.cumulative}")

    @property
    def count(self) -> int:
        """Gaps counted."""
        return self.cumulative[-1]

    @property
    def beyond_last_bound(self) -> int:
        """Gaps longer than the last finite bound (those only ``+Inf`` holds)."""
        return self.cumulative[-1] - self.cumulative[-2] if len(self.cumulative) > 1 \
            else self.cumulative[-1]

    @classmethod
    def between(cls, earlier: TickGaps, later: TickGaps) -> TickGaps:
        """The gaps counted after ``earlier`` and up to ``later`` (two scrapes of one node).

        ValueError if their buckets differ, or if a count fell: the node restarted in between,
        its counts began again, and the window's gaps cannot be known."""
        if earlier.bounds != later.bounds:
            raise ValueError(f"the buckets changed: {earlier.bounds} then {later.bounds}")
        counts = tuple(b - a for a, b in zip(earlier.cumulative, later.cumulative, strict=True))
        if any(count < 0 for count in counts) or later.sum_seconds < earlier.sum_seconds:
            raise ValueError("a tick-gap count fell between the scrapes: the node restarted")
        return cls(later.bounds, counts, later.sum_seconds - earlier.sum_seconds)

    def quantile(self, fraction: float) -> float | None:
        """The ``fraction`` quantile in seconds, as Prometheus' ``histogram_quantile``
        estimates it; None for no gaps. In the ``+Inf`` bucket it is the last finite bound."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"a quantile is between 0 and 1, not {fraction}")
        if self.count == 0:
            return None
        rank = fraction * self.count
        index = next(i for i, seen in enumerate(self.cumulative) if seen >= rank)
        if index == len(self.bounds) - 1:
            return self.bounds[-2] if len(self.bounds) > 1 else None
        below = self.cumulative[index - 1] if index else 0
        lower = self.bounds[index - 1] if index else 0.0
        upper = self.bounds[index]
        inside = self.cumulative[index] - below
        if inside == 0:  # the rank sits exactly on the bucket's lower edge
            return lower
        return lower + (upper - lower) * (rank - below) / inside

    def max_bound(self) -> float | None:
        """The upper bound of the highest bucket holding a gap (``inf`` past the last finite
        bound); None for no gaps."""
        previous = 0
        highest = None
        for bound, seen in zip(self.bounds, self.cumulative, strict=True):
            if seen > previous:
                highest = bound
            previous = seen
        return highest

    def fields(self, prefix: str = "leader_tick_gap_") -> dict[str, Any]:
        """Machine-readable figures (strict JSON: no infinity): ``p99_ms``, ``max_ms`` (the
        highest bucket's bound; for a gap past the last finite bound that bound, and
        ``beyond_count`` says how many), ``mean_ms``, ``count``. A figure of no gaps is None."""
        p99 = self.quantile(0.99)
        highest = self.max_bound()
        if highest == math.inf:
            highest = self.bounds[-2] if len(self.bounds) > 1 else None
        return {
            f"{prefix}p99_ms": None if p99 is None else round(p99 * 1000, 2),
            f"{prefix}max_ms": None if highest is None else round(highest * 1000, 2),
            f"{prefix}beyond_count": self.beyond_last_bound,
            f"{prefix}mean_ms": (round(self.sum_seconds / self.count * 1000, 3) if self.count
                                 else None),
            f"{prefix}count": self.count,
        }


def parse_tick_gaps(text: str) -> TickGaps:
    """The tick-gap histogram of a ``/metrics`` answer; TickGapsUnavailable if it has none."""
    for family in text_string_to_metric_families(text):
        if family.name != METRIC:
            continue
        buckets: list[tuple[float, int]] = []
        total = None
        for sample in family.samples:
            if sample.name == f"{METRIC}_bucket":
                buckets.append((float(sample.labels["le"]), int(sample.value)))
            elif sample.name == f"{METRIC}_sum":
                total = float(sample.value)
        if buckets and total is not None:
            buckets.sort()
            try:
                return TickGaps(tuple(b for b, _ in buckets), tuple(c for _, c in buckets),
                                total)
            except ValueError as error:
                raise TickGapsUnavailable(f"a malformed {METRIC}: {error}") from error
    raise TickGapsUnavailable(f"no {METRIC} histogram in the metrics")


def scrape_tick_gaps(url: str, *, headers: dict[str, str] | None = None,
                     verify: Any = True, timeout: float = 10.0, attempts: int = 3) -> TickGaps:
    """The tick-gap histogram of the controller at ``url`` (its HTTP listener), from its
    ``GET /metrics``. ``headers`` authenticate (a principal with DESCRIBE on the cluster:
    ``LocalCluster.headers``, the admin), ``verify`` is httpx's (``LocalCluster.verify``).

    A controller busy with an attack may answer late: ``attempts`` tries of ``timeout``
    seconds, then TickGapsUnavailable. ``trust_env=False``: no proxy may stand in between."""
    failure = ""
    for attempt in range(attempts):
        if attempt:
            time.sleep(0.5)
        try:
            answer = httpx.get(f"{url}/metrics", headers=headers, verify=verify,
                               timeout=timeout, trust_env=False)
        except httpx.HTTPError as error:
            failure = repr(error)
            continue
        if answer.status_code != 200:
            failure = f"HTTP {answer.status_code}: {answer.text[:200]}"
            continue
        return parse_tick_gaps(answer.text)
    raise TickGapsUnavailable(f"{url}/metrics did not answer in {attempts} tries: {failure}")


class TickGapWindow:
    """One controller's tick gaps over a bench window: :meth:`start` and :meth:`end` scrape
    it, :meth:`fields` gives the window's figures. A scrape that fails leaves the figures None
    and says why in ``{prefix}unavailable`` (a window whose gaps are unknown must not pass a
    target by default). Not thread-safe: one thread drives a window."""

    def __init__(self, url: str, *, headers: dict[str, str] | None = None,
                 verify: Any = True) -> None:
        self.url = url
        self._headers = headers
        self._verify = verify
        self._earlier: TickGaps | str = "not scraped at the window's start"
        self._later: TickGaps | str = "not scraped at the window's end"

    def _scrape(self) -> TickGaps | str:
        try:
            return scrape_tick_gaps(self.url, headers=self._headers, verify=self._verify)
        except TickGapsUnavailable as error:
            return str(error)

    def start(self) -> None:
        self._earlier = self._scrape()

    def end(self) -> None:
        self._later = self._scrape()

    def gaps(self) -> TickGaps | str:
        """The window's gaps, or why they are unknown."""
        earlier, later = self._earlier, self._later
        if isinstance(earlier, str):
            return earlier
        if isinstance(later, str):
            return later
        try:
            return TickGaps.between(earlier, later)
        except ValueError as error:
            return str(error)

    def fields(self, prefix: str = "leader_tick_gap_") -> dict[str, Any]:
        gaps = self.gaps()
        if isinstance(gaps, str):
            return {f"{prefix}p99_ms": None, f"{prefix}max_ms": None,
                    f"{prefix}beyond_count": None, f"{prefix}mean_ms": None,
                    f"{prefix}count": None, f"{prefix}unavailable": gaps}
        return {**gaps.fields(prefix), f"{prefix}unavailable": None}
