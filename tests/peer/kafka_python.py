"""kafka-python's own integration tests, run against a chunkraft cluster.

The tests are ``test/integration`` of kafka-python's source distribution for the version
installed here, downloaded from PyPI at run time with pip (``pip download --no-binary :all:
--no-deps kafka-python==X``), kept in a cache directory and unpacked into a scratch one for
each run; none of kafka-python's files is in this repository. They run with their documented
switch for an external broker, ``KAFKA_URI=PLAINTEXT://host:port`` (one of the cluster's Kafka
listeners) and ``KAFKA_VERSION`` (the broker version the suite assumes: what kafka-python
infers from the cluster's ApiVersions), plus :mod:`tests.peer.kafka_python_plugin`, which
makes their fixture log in with SASL/PLAIN.

The sdist leaves out two of the files the suite imports: ``test/__init__.py`` (``test`` must
be a package, not the standard library's) and ``test/service.py``, whose ``ExternalService``
the fixture wraps an external broker in; both are written here (:data:`SERVICE_SHIM`, this
project's own few lines). ``KAFKA_ROOT`` points at the scratch directory, which the fixture
only checks exists.

``python -m tests.peer.kafka_python`` starts a local cluster (3 controllers, 3 brokers), runs
the whole suite against it and prints one JSON summary: every test's outcome, the list of
passing tests compared with ``kafka_python_passing.txt`` and the others with the reasons in
``kafka_python_not_passing.txt``. Every wait is bounded in time.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["NOT_PASSING", "PASSING", "Outcome", "SuiteRun", "installed_version",
           "kafka_version", "known_not_passing", "known_passing", "prepare_suite",
           "run_suite", "sdist"]

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parent.parent
PASSING = HERE / "kafka_python_passing.txt"
NOT_PASSING = HERE / "kafka_python_not_passing.txt"
CACHE = Path(os.environ.get("CHUNKRAFT_PEER_CACHE", REPOSITORY / ".chunkraft" / "peer-suite"))
DOWNLOAD_TIMEOUT = 180.0
SUITE = "test/integration"
PER_TEST_TIMEOUT = 120

SERVICE_SHIM = '''"""Written by chunkraft's peer-suite runner (the sdist has no test/service.py)."""


class ExternalService:
    def __init__(self, host, port):
        self.host = host
        self.port = port

    def open(self):
        pass

    def close(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("the peer-suite run starts no Kafka process: only KAFKA_URI's broker")
'''

PYTEST_INI = f"""[pytest]
timeout = {PER_TEST_TIMEOUT}
timeout_method = thread
log_level = INFO
"""


def installed_version() -> str:
    """The version of kafka-python this interpreter imports."""
    return importlib.metadata.version("kafka-python")


def sdist(version: str, cache: Path = CACHE, timeout: float = DOWNLOAD_TIMEOUT) -> Path:
    """kafka-python's sdist of ``version``: from ``cache``, else downloaded there by pip
    within ``timeout`` seconds. RuntimeError with pip's output if it could not be had."""
    name = f"kafka_python-{version}.tar.gz"
    if (cache / name).is_file():
        return cache / name
    cache.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
               "--disable-pip-version-check", "--dest", str(cache),
               f"kafka-python=={version}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(f"pip download of kafka-python {version}'s sdist took over "
                           f"{timeout:.0f} s: {error.stdout!r} {error.stderr!r}") from None
    if done.returncode != 0 or not (cache / name).is_file():
        raise RuntimeError(f"pip download of kafka-python {version}'s sdist failed "
                           f"(exit {done.returncode}): {done.stdout}{done.stderr}")
    return cache / name


def prepare_suite(archive: Path, into: Path) -> Path:
    """Unpacks the sdist's ``test/`` into ``into`` with the two files it leaves out and a
    pytest.ini of the run's own (kafka-python's pyproject, with its DEBUG logs and 300 s
    timeouts, is not unpacked); returns the directory to run pytest in."""
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        members = [m for m in tar.getmembers() if m.name.startswith(f"{top}/test/")]
        for member in members:
            member.name = member.name[len(top) + 1:]
        tar.extractall(into, members=members, filter="data")
    (into / "test" / "__init__.py").touch()
    (into / "test" / "service.py").write_text(SERVICE_SHIM)
    (into / "pytest.ini").write_text(PYTEST_INI)
    return into


def kafka_version(bootstrap: str, settings: dict[str, Any]) -> str:
    """The broker version kafka-python infers from ``bootstrap``'s ApiVersions, "3.8" (what
    its consumer reports, as the suite's ``test_kafka_version_infer`` reads it)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=20_000,
                             **settings)
    try:
        return ".".join(str(part) for part in consumer.config["api_version"])
    finally:
        consumer.close()


@dataclass(frozen=True)
class Outcome:
    """One test's result: ``passed``, ``failed``, ``error`` or ``skipped``, and why."""

    outcome: str
    message: str = ""
    seconds: float = 0.0


@dataclass
class SuiteRun:
    """A run of the suite: each test's :class:`Outcome` by node id, pytest's exit status,
    how long it took and the tail of its output."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    exit_status: int = 0
    seconds: float = 0.0
    output_tail: str = ""

    def with_outcome(self, outcome: str) -> list[str]:
        return sorted(n for n, o in self.outcomes.items() if o.outcome == outcome)


def run_suite(workdir: Path, *, bootstrap: str, password: str, version: str,
              tests: list[str] | None = None, username: str = "admin",
              timeout: float = 1800.0, tail: int = 6000) -> SuiteRun:
    """Runs kafka-python's ``tests`` (node ids; default the whole suite) in ``workdir`` (from
    :func:`prepare_suite`) against the Kafka listener ``bootstrap`` (one ``host:port``), as
    ``username`` with ``password``, within ``timeout`` seconds; keeps the last ``tail``
    characters of its output."""
    report = workdir / "junit.xml"
    env = {**os.environ, "KAFKA_URI": f"PLAINTEXT://{bootstrap}", "KAFKA_VERSION": version,
           "KAFKA_ROOT": str(workdir), "CHUNKRAFT_PEER_USERNAME": username,
           "CHUNKRAFT_PEER_PASSWORD": password,
           "PYTHONPATH": os.pathsep.join([str(workdir), str(REPOSITORY)])}
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", "-p", "tests.peer.kafka_python_plugin",
               "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rfEs",
               "--rootdir", str(workdir), "-c", str(workdir / "pytest.ini"),
               f"--junitxml={report}", *(tests or [SUITE])]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        status, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as error:
        status, output = -1, f"timed out after {timeout:.0f} s: {error.stdout!r}"
    run = SuiteRun(exit_status=status, seconds=time.monotonic() - started,
                   output_tail=output[-tail:])
    if report.is_file():
        run.outcomes = junit_outcomes(report)
    return run


def junit_outcomes(report: Path) -> dict[str, Outcome]:
    """Each test case of a junit XML report, by its node id (``test/integration/x.py::t``)."""
    outcomes: dict[str, Outcome] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        name = case.get("name", "")
        # classname is test.integration.module[.Class]
        path = "/".join(module[:3]) + ".py"
        node_id = "::".join([path, *module[3:], name])
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                outcome = {"failure": "failed"}.get(kind, kind)
                message = (found.get("message") or "").splitlines()[0][:300] if (
                    found.get("message")) else ""
                break
        seconds = float(case.get("time", "0") or 0)
        if node_id in outcomes and outcome == "passed":
            continue  # a teardown error is reported as a second case of the same test
        outcomes[node_id] = Outcome(outcome, message, seconds)
    return outcomes


def known_passing(path: Path = PASSING) -> list[str]:
    """The node ids of ``kafka_python_passing.txt`` (one a line, ``#`` comments)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def known_not_passing(path: Path = NOT_PASSING) -> dict[str, str]:
    """``kafka_python_not_passing.txt``: node id -> why it does not pass (``id  # reason``)."""
    known: dict[str, str] = {}
    for line in path.read_text().splitlines():
        node_id, _, reason = line.partition("#")
        if node_id.strip():
            known[node_id.strip()] = reason.strip()
    return known


def summary(run: SuiteRun, *, version: str, kafka: str) -> dict[str, Any]:
    """The machine-readable summary of a whole-suite run, compared with the two lists."""
    passing = set(known_passing())
    explained = known_not_passing()
    passed = run.with_outcome("passed")
    others = {n: {"outcome": o.outcome, "message": o.message,
                  "reason": explained.get(n, "")} for n, o in sorted(run.outcomes.items())
              if o.outcome != "passed"}
    return {
        "peer": "kafka-python", "version": version, "kafka_version": kafka,
        "seconds": round(run.seconds, 1), "pytest_exit_status": run.exit_status,
        "counts": {kind: len(run.with_outcome(kind))
                   for kind in ("passed", "failed", "error", "skipped")},
        "passed": passed, "not_passed": others,
        "newly_passing": sorted(set(passed) - passing),
        "no_longer_passing": sorted(passing - set(passed)),
        "unexplained": sorted(n for n in others if n not in explained),
    }


def main(argv: list[str] | None = None) -> int:
    """Starts a local cluster, runs the whole suite (or ``--passing``: the listed tests) and
    prints the JSON summary; exit 0 if the passing list still passes and every other test is
    explained."""
    parser = argparse.ArgumentParser(prog="python -m tests.peer.kafka_python",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--passing", action="store_true",
                        help="run only the tests of kafka_python_passing.txt")
    parser.add_argument("tests", nargs="*", help="node ids (default: the whole suite)")
    args = parser.parse_args(argv)

    from tests.support.brokers import broker_cluster
    from tests.support.kafka_stock import python_settings

    version = installed_version()
    archive = sdist(version)
    with tempfile.TemporaryDirectory(prefix="peer-kafka-python-") as scratch:
        workdir = prepare_suite(archive, Path(scratch) / "suite")
        with broker_cluster(Path(scratch) / "cluster") as cluster:
            settings = python_settings(cluster)
            settings.pop("bootstrap_servers")
            bootstrap = cluster.kafka_bootstrap_servers.split(",")[0]
            kafka = kafka_version(bootstrap, settings)
            tests = args.tests or (known_passing() if args.passing else None)
            run = run_suite(workdir, bootstrap=bootstrap, password=cluster.admin_token,
                            version=kafka, tests=tests)
    result = summary(run, version=version, kafka=kafka)
    if not run.outcomes:
        result["output_tail"] = run.output_tail
    print(json.dumps(result, indent=2))
    failing = result["no_longer_passing"] or (result["unexplained"] and not args.passing)
    return 1 if failing or not run.outcomes else 0


if __name__ == "__main__":
    sys.exit(main())
