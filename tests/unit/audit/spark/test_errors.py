"""A Spark failure as one line: the file named, the cause that made reading it fail."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chunkraft.audit.spark.errors import describe_spark_error, java_chain


@dataclass
class _Class:
    name: str

    def getName(self) -> str:
        return self.name


@dataclass
class _Throwable:
    """Stands for a Java throwable as py4j exposes it."""

    name: str
    message: str | None
    cause: _Throwable | None = None

    def getClass(self) -> _Class:
        return _Class(self.name)

    def getMessage(self) -> str | None:
        return self.message

    def getCause(self) -> _Throwable | None:
        return self.cause

    def hashCode(self) -> int:
        return id(self)


class _Py4JError(Exception):
    def __init__(self, java: _Throwable) -> None:
        super().__init__("An error occurred while calling o2163.collectToPython.\n: trace...")
        self.java_exception = java


FILE = Path("/exports/now/chunks/part-00000.parquet")


def _executor_failure() -> _Py4JError:
    root = _Throwable("shaded.parquet.org.apache.thrift.protocol.TProtocolException",
                      "don't know what type: 15")
    io = _Throwable("java.io.IOException",
                    "can not read class org.apache.parquet.format.PageHeader: don't know what "
                    "type: 15", root)
    read = _Throwable("org.apache.spark.SparkException",
                      f"[FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
                      f"file://{FILE}.  SQLSTATE: KD001", io)
    job = _Throwable("org.apache.spark.SparkException",
                     "Job aborted due to stage failure: Task 0 in stage 10.0 failed 1 times, "
                     f"most recent failure: ... reading file file://{FILE}.\nDriver stacktrace:",
                     read)
    return _Py4JError(job)


def test_an_executor_failure_names_the_file_and_the_cause_of_the_read_error() -> None:
    error = _executor_failure()
    assert len(java_chain(error)) == 4
    assert describe_spark_error(error, [FILE, FILE.with_name("part-0000.parquet")]) == (
        f"cannot read {FILE}: IOException: can not read class "
        "org.apache.parquet.format.PageHeader: don't know what type: 15")


def test_without_a_known_file_the_innermost_cause_is_named() -> None:
    error = _executor_failure()
    assert describe_spark_error(error, [Path("/elsewhere/x.parquet")]) == (
        "Spark failed: TProtocolException: don't know what type: 15")


def test_a_plain_python_error_is_one_line_too() -> None:
    assert describe_spark_error(ValueError("bad\nsecond line"), [FILE]) == (
        "Spark failed: ValueError: bad")


def test_a_cause_that_cycles_ends_the_walk() -> None:
    loop = _Throwable("java.lang.RuntimeException", "again")
    loop.cause = loop
    assert java_chain(_Py4JError(loop)) == [("java.lang.RuntimeException", "again")]
