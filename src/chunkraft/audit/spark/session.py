"""The SparkSession the audit runs in: quiet, small shuffles, and the master only if asked.

``spark-submit --master ...`` decides where a submitted job runs, and a ``.master()`` in code
would override it, so :func:`build_session` sets the master only when the caller names one;
without either, PySpark runs ``local[*]``. When this process launches the driver JVM itself
(not under spark-submit), it can start it with a class-data sharing archive
(:mod:`chunkraft.audit.spark.class_archive`, through :func:`start_session`); the
:class:`LaunchedDriver` it returns then stops that JVM and publishes the archive it wrote.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from chunkraft.audit.spark.class_archive import ArchiveMode, ClassArchive

__all__ = ["DEFAULT_CONF", "LaunchedDriver", "build_session", "quiet_log4j_file",
           "start_session"]

_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_JVM_EXIT_TIMEOUT_S = 120.0
"""How long :meth:`LaunchedDriver.stop` waits for the driver JVM to exit (writing a class archive
made it 13.6 s in bench/bench_spark_start.py)."""

DEFAULT_CONF: dict[str, str] = {
    "spark.app.name": "chunkraft-audit",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # The audit's shuffles are of one snapshot: a few partitions per core beat Spark's 200.
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "2g",
    # Adaptive execution re-plans at every shuffle; the audit's plans have one big shuffle.
    # The 1M-partition audit (report.json seconds.total) took 45.7 s and 50.9 s without it,
    # 51.0 s and 52.9 s with it (bench/RESULTS.md, 2026-11-22).
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}
"""Settings applied unless the caller's ``conf`` (or spark-submit's) gives its own."""

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
# A failed task is raised to the driver, and the job reports it in one line naming the file:
# the executor's stack trace and the task set's abort would only repeat it, 40 lines long.
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
"""

_JVM_NOISE = (b"WARNING: Using incubator modules: jdk.incubator.vector",
              b'Setting default log level to "',
              b"To adjust logging level use sc.setLogLevel(newLevel).")
"""Starts of the lines the driver JVM prints on stderr at every start, which say nothing to the
user: Spark's launcher adds the incubator module itself, and Spark treats PySpark's driver as a
shell, printing its default level however log4j is configured. The relay of
:func:`_quiet_jvm_stderr` drops them."""


def quiet_log4j_file() -> Path:
    """A log4j2 configuration logging errors only (written once per user in the temp dir)."""
    # Named by its content: runs of other versions sharing the temp dir keep their own file.
    digest = zlib.crc32(_LOG4J.encode()) & 0xFFFFFFFF
    path = (Path(tempfile.gettempdir())
            / f"chunkraft-audit-log4j2-{os.getuid()}-{digest:08x}.properties")
    if not path.exists() or path.read_text(encoding="utf-8") != _LOG4J:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J, encoding="utf-8")
        os.replace(tmp, path)
    return path


@dataclass(frozen=True)
class LaunchedDriver:
    """The driver JVM one :func:`start_session` call launched in this process.

    Contract: :meth:`stop` stops the session and this JVM, waits for it (bounded) and, if
    the JVM wrote a class archive and exited with status 0, publishes the archive. Only the
    caller that launched the JVM holds one, so a session found running is never stopped.
    """

    archive: ClassArchive | None
    archive_mode: ArchiveMode

    @property
    def writes_archive(self) -> bool:
        """The JVM writes a pending archive as it exits (a slower stop, once)."""
        return self.archive is not None and self.archive_mode == "written"

    def stop(self, spark: SparkSession) -> None:
        gateway = SparkContext._gateway
        process = getattr(gateway, "proc", None) if gateway is not None else None
        spark.stop()
        if gateway is None or process is None:
            return
        gateway.shutdown()
        _forget_jvm()
        if process.stdin is not None:
            process.stdin.close()  # the JVM exits when its stdin closes
        try:
            status = process.wait(timeout=_JVM_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return
        if self.archive is not None and self.archive_mode == "written" and status == 0:
            self.archive.publish()


def _launches_jvm() -> bool:
    """True when getOrCreate will start a driver JVM (not under spark-submit, none yet)."""
    return SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ


def _forget_jvm() -> None:
    """Lets the next session launch a new driver JVM (PySpark keeps the gateway in
    class attributes)."""
    SparkContext._gateway = None
    SparkContext._jvm = None


def build_session(master: str | None = None,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """A SparkSession for the audit (an existing one is reused, with ``conf`` applied).

    ``master`` is set only when given. ``SPARK_LOCAL_IP`` and ``PYSPARK_PYTHON`` default to
    127.0.0.1 and this interpreter, so a laptop run binds locally and executors run the same
    Python (and packages) as the driver.
    """
    return start_session(master, conf)[0]


def start_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                  class_archive: ClassArchive | None = None,
                  ) -> tuple[SparkSession, LaunchedDriver | None]:
    """:func:`build_session`, and the :class:`LaunchedDriver` if this call launched the
    driver JVM (None if it reused a session or runs under spark-submit).

    ``class_archive`` is used only when this call launches the JVM and ``conf`` sets no
    driver Java options of its own; should the JVM fail to start with a published archive,
    the archive is discarded and the JVM started without one.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = dict(DEFAULT_CONF)
    settings[_JAVA_OPTIONS] = f"-Dlog4j.configurationFile=file:{quiet_log4j_file()}"
    settings.update(conf or {})
    if not _launches_jvm():
        return _get_or_create(master, settings), None
    mode: ArchiveMode = "off"
    options: tuple[str, ...] = ()
    if class_archive is not None and _JAVA_OPTIONS not in (conf or {}):
        mode, options = class_archive.java_options()
    try:
        with _quiet_jvm_stderr():
            session = _get_or_create(master, {
                **settings, _JAVA_OPTIONS: " ".join((settings[_JAVA_OPTIONS], *options))})
    except Exception:
        if class_archive is None or mode != "mapped":
            raise
        class_archive.discard()
        _forget_jvm()
        with _quiet_jvm_stderr():
            return _get_or_create(master, settings), LaunchedDriver(None, "off")
    return session, LaunchedDriver(class_archive if mode != "off" else None, mode)


def _relay(source: int, target: int) -> None:
    """Copies lines from ``source`` to ``target`` until end of file, dropping
    :data:`_JVM_NOISE`; closes both."""
    with os.fdopen(source, "rb", buffering=0) as lines, contextlib.suppress(OSError):
        for line in iter(lines.readline, b""):
            if not line.startswith(_JVM_NOISE):
                os.write(target, line)
    with contextlib.suppress(OSError):
        os.close(target)


@contextlib.contextmanager
def _quiet_jvm_stderr() -> Iterator[None]:
    """While the block launches the driver JVM, file descriptor 2 is a pipe; the JVM keeps it
    as its stderr for life, and a daemon thread relays it to this process's real stderr
    without the start-up noise. Python's own stderr is restored when the block ends."""
    try:
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        real = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2 (an embedding host): launch as is
        yield
        return
    os.dup2(write_end, 2)
    os.close(write_end)
    threading.Thread(target=_relay, args=(read_end, os.dup(real)), daemon=True,
                     name="jvm-stderr").start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)
        os.close(real)


def _get_or_create(master: str | None, settings: Mapping[str, str]) -> SparkSession:
    builder = SparkSession.builder
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
