"""kafka-python's own integration tests against chunkraft's brokers: the tests listed in
``tests/peer/kafka_python_passing.txt`` all pass.

The suite is ``test/integration`` of the sdist of the installed kafka-python, downloaded from
PyPI by pip at run time (bounded; a failed download fails this test, it is never skipped) and
run in a subprocess with its switch for an external broker (``KAFKA_URI``) against 3
controllers and 3 brokers with SASL_PLAINTEXT Kafka listeners on 127.0.0.1
(:mod:`tests.peer.kafka_python`). ``python -m tests.peer.kafka_python`` runs the whole suite;
``docs/clients.md`` ("kafka-python's own test suite") says why each other test does not pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peer.kafka_python import (
    installed_version,
    kafka_version,
    known_not_passing,
    known_passing,
    prepare_suite,
    run_suite,
    sdist,
)
from tests.support.brokers import broker_cluster
from tests.support.kafka_stock import python_settings

SUITE_TIMEOUT = 240.0


def test_the_lists_name_each_test_once() -> None:
    passing, others = known_passing(), known_not_passing()
    assert len(set(passing)) == len(passing)
    assert not set(passing) & set(others)
    assert all(others.values()), [n for n, why in others.items() if not why]


def test_kafka_python_passing_tests_pass(tmp_path: Path) -> None:
    archive = sdist(installed_version())  # RuntimeError, with pip's output, if not had
    workdir = prepare_suite(archive, tmp_path / "suite")
    passing = known_passing()
    with broker_cluster(tmp_path / "cluster") as cluster:
        settings = python_settings(cluster)
        settings.pop("bootstrap_servers")
        bootstrap = cluster.kafka_bootstrap_servers.split(",")[0]
        version = kafka_version(bootstrap, settings)
        run = run_suite(workdir, bootstrap=bootstrap, password=cluster.admin_token,
                        version=version, tests=passing, timeout=SUITE_TIMEOUT)
    if not run.outcomes:
        pytest.fail(f"kafka-python's suite reported nothing (exit {run.exit_status}):\n"
                    f"{run.output_tail}")
    not_passed = {n: f"{o.outcome}: {o.message}" for n, o in run.outcomes.items()
                  if o.outcome != "passed"}
    missing = sorted(set(passing) - set(run.outcomes))
    assert not not_passed and not missing, (
        f"kafka-python {installed_version()} (KAFKA_VERSION {version}): not passed "
        f"{not_passed}, not run {missing}\n{run.output_tail}")
    assert run.exit_status == 0, run.output_tail
