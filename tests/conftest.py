"""Suite-wide: with pytest-xdist, the tests that start real processes run one after the other.

``scripts/test`` runs pytest with two pytest-xdist workers and ``--dist loadgroup``. Here that
mode schedules every test under ``tests/integration`` and ``tests/e2e`` (controller quorums,
broker agents, the CLI as a subprocess, timing checks) as ONE work unit: one worker runs them
all, serially and in file order, exactly as a plain ``pytest`` run does (module-scoped clusters
included), while the other worker runs the unit and property tests (in-process, no fixed ports
or shared paths), one test at a time as it asks for more. The biggest unit goes out first.

Why not xdist's own ``xdist_group`` marks: pytest-xdist 3.8 groups by appending ``@group`` to
``item._nodeid``, which pytest 9.2's node ids no longer read, so the marks group nothing. The
grouping is by path instead, on the node ids the scheduler sees. Without xdist installed, or
with ``-n 0``, nothing here takes effect.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

# ``chunkraft audit`` keeps a class-data sharing archive of its driver JVM in the user's cache
# (chunkraft.audit.spark.class_archive). Tests must not write there, and writing it costs the
# first audit about 15 s: it is off for the suite (child processes inherit this), and on only
# in tests/integration/test_audit_class_archive.py, in a temporary directory.
os.environ.setdefault("CHUNKRAFT_SPARK_CDS", "0")

PROCESS_GROUP = "processes"
"""The work unit of the tests that start real processes."""
PROCESS_DIRS = ("tests/integration/", "tests/e2e/")
"""Node ids (relative to the repository) of the tests in :data:`PROCESS_GROUP`."""


OWN_UNIT_MODULES = ("tests/e2e/test_audit.py", "tests/integration/test_openapi.py",
                    "tests/integration/test_audit_class_archive.py",
                    "tests/integration/test_steady_leader.py")
"""Process tests that are a work unit of their own (their module, whole), run by the worker
that does not run the process group, to balance the two: the audit's e2e module starts its
quorum only to export it, then runs Spark; the OpenAPI module checks answers against the
document, with no timing checks; the class-archive module starts only Spark's JVMs (a minute
of them, no cluster); the steady-leader module's two quorums spend three minutes mostly idle,
and a steady leader on a host busy with other tests is what it asserts. The process group is
still the longer of the two workers' shares."""


def scope_of(nodeid: str) -> str:
    """The work unit of a test: its module for :data:`OWN_UNIT_MODULES`,
    :data:`PROCESS_GROUP` for the other tests that start real processes, else the test itself
    (so the other worker takes tests one by one)."""
    module = nodeid.split("::", 1)[0]
    if module in OWN_UNIT_MODULES:
        return module
    return PROCESS_GROUP if nodeid.startswith(PROCESS_DIRS) else nodeid


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pragma: no cover - xdist is in the dev extra
    pass
else:
    if TYPE_CHECKING:
        from xdist.remote import Producer

    class ProcessGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """xdist's scope scheduling with the scopes of :func:`scope_of`: the process tests
        are one unit, sent whole to one worker; every other test is a unit of its own."""

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    @pytest.hookimpl(tryfirst=True, optionalhook=True)  # absent under -p no:xdist
    def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Any:
        if config.getvalue("dist") != "loadgroup":
            return None  # xdist's own scheduler for the other modes
        return ProcessGroupScheduling(config, log)


# ------------------------------------------------------------------ a steady leader, checked

LEADER_CHANGES = "leader_changes"
"""The marker of a test that moves the controllers' leader on purpose (see pyproject.toml)."""


def _quorums_of(item: pytest.Item) -> list[Any]:
    """The running local quorums among the test's fixtures (LocalCluster objects)."""
    from chunkraft.local.local_cluster import LocalCluster

    funcargs = getattr(item, "funcargs", {})
    found: list[Any] = []
    for value in funcargs.values():
        if isinstance(value, LocalCluster) and all(value is not seen for seen in found):
            found.append(value)
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Every test that runs on a real quorum (a LocalCluster fixture) fails if the quorum's
    leader or term moved while it ran, unless it is marked ``leader_changes``: a steady quorum
    elects once and keeps its leader, and the clients' retries of NOT_CONTROLLER would
    otherwise hide a flapping one (they did, for a week)."""
    from chunkraft.local.steady_leader import leadership_moved

    watched = [] if item.get_closest_marker(LEADER_CHANGES) else _quorums_of(item)
    before = [cluster.leadership() for cluster in watched]
    result = yield
    for cluster, first in zip(watched, before, strict=True):
        if not first.nodes:
            continue  # nothing answered at the start: nothing to compare
        moved = leadership_moved(first, cluster.leadership())
        if moved is not None:
            raise AssertionError(
                f"the quorum under {cluster.base_dir} did not keep its leader while the test "
                f"ran: {moved}. Mark the test leader_changes if it moves the leader on "
                f"purpose; otherwise the controllers' logs say why (search 'the leader is')")
    return result
