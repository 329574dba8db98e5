"""The audit job: ``chunkraft audit ...`` and ``spark-submit deploy/spark/audit_job.py ...``.

Exit status: 0 when no rule at least ``--fail-on`` fired, 1 when one did, 2 when the job
itself failed (bad input, an input file missing or differing from its manifest, Spark
failure): then one line goes to stderr and, if ``--report`` is writable, ``report.json`` says
``"status": "error"``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from chunkraft.audit.catalog import Severity
from chunkraft.audit.inputs import AuditInputError, AuditInputs, AuditSettings
from chunkraft.audit.model import AuditReport
from chunkraft.export.manifest import ExportError

if TYPE_CHECKING:  # pyspark is imported only when the Spark engine runs
    from pyspark.sql import SparkSession

    from chunkraft.audit.spark.session import LaunchedDriver

__all__ = ["add_arguments", "build_parser", "main", "outcome_line", "parse_duration", "run"]

_UNITS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration(text: str) -> int:
    """Milliseconds of ``10m``, ``30s``, ``2h``, ``1d``, ``500ms`` (a bare number: seconds)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 30s, 10m, 2h)")
    return int(float(match.group(1)) * _UNITS[match.group(2) or "s"])


def _conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--conf wants KEY=VALUE, not {text!r}")
    return key.strip(), value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The job's flags (shared by the CLI subcommand and the spark-submit entry point)."""
    defaults = AuditSettings()
    parser.add_argument("--snapshot", required=True, help="controller snapshot export to audit")
    parser.add_argument("--previous", help="an earlier snapshot export of the same cluster")
    parser.add_argument("--brokers-state", nargs="+", default=[], metavar="DIR",
                        help="brokers' local state exports")
    parser.add_argument("--master", help="Spark master URL (default: spark-submit's, or "
                                         "local[*])")
    parser.add_argument("--engine", choices=("spark", "arrow"), default="spark")
    parser.add_argument("--report", type=Path, help="directory for report.json/.md/.html")
    parser.add_argument("--sample-size", type=int, default=defaults.sample_size)
    parser.add_argument("--fenced-threshold", type=parse_duration,
                        default=defaults.fenced_threshold_ms, help="e.g. 10m")
    parser.add_argument("--stuck-move-threshold", type=parse_duration,
                        default=defaults.stuck_move_threshold_ms, help="e.g. 30m")
    parser.add_argument("--max-skew", type=float, default=defaults.max_skew)
    parser.add_argument("--fail-on", choices=("error", "warning"), default="warning")
    parser.add_argument("--conf", type=_conf, action="append", default=[], metavar="K=V",
                        help="a Spark setting (repeatable)")
    parser.add_argument("--manifest-key-file", type=Path, metavar="FILE",
                        help="HMAC key: every input's manifest must be signed with it")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chunkraft audit",
                                     description="Audit a controller snapshot export.")
    add_arguments(parser)
    return parser


def _audit(args: argparse.Namespace, cleanup: contextlib.ExitStack) -> AuditReport:
    key = None
    if args.manifest_key_file is not None:
        from chunkraft.export.signature import read_key

        try:
            key = read_key(args.manifest_key_file)
        except ExportError as error:
            raise AuditInputError(str(error)) from error
    inputs = AuditInputs.load(args.snapshot, args.previous, tuple(args.brokers_state), key=key)
    settings = AuditSettings(sample_size=args.sample_size,
                             fenced_threshold_ms=args.fenced_threshold,
                             stuck_move_threshold_ms=args.stuck_move_threshold,
                             max_skew=args.max_skew)
    if args.engine == "arrow":
        from chunkraft.audit.arrow.runner import run_audit as run_arrow

        return run_arrow(inputs, settings)
    from chunkraft.audit.spark.class_archive import ClassArchive
    from chunkraft.audit.spark.runner import run_audit as run_spark
    from chunkraft.audit.spark.session import start_session

    spark, launched = start_session(args.master, dict(args.conf),
                                    ClassArchive.for_this_installation())
    if launched is not None:
        cleanup.callback(_stop, spark, launched)
    try:
        return run_spark(spark, inputs, settings)
    except Exception as error:
        from chunkraft.audit.spark.errors import describe_spark_error

        # The failure is now described in one line. What Spark logs while it tears down the
        # failed job's other tasks (a status update racing the stop, at ERROR) is not news,
        # and would break the one-line contract on stderr.
        with contextlib.suppress(Exception):
            spark.sparkContext.setLogLevel("OFF")
        raise _SparkFailure(describe_spark_error(error, _input_files(inputs))) from error


class _SparkFailure(Exception):
    """A Spark failure, already described in one line."""


def _input_files(inputs: AuditInputs) -> list[Path]:
    exports = [inputs.snapshot, *([inputs.previous] if inputs.previous else []),
               *inputs.broker_states]
    # Spark names a file by its absolute path, symbolic links kept: match either spelling.
    return sorted({form for export in exports for table in export.manifest.tables
                   for path in export.table_files(table)
                   for form in (path.absolute(), path.resolve())})


def _stop(spark: SparkSession, launched: LaunchedDriver) -> None:
    if launched.writes_archive:
        print("audit: saving the Spark driver's class archive for faster starts (once)",
              file=sys.stderr, flush=True)
    launched.stop(spark)


def run(args: argparse.Namespace) -> int:
    """Runs the audit of parsed ``args``; returns the exit status (0, 1 or 2). The reports
    are written before the Spark session (and a driver JVM this process started) stops."""
    with contextlib.ExitStack() as cleanup:
        return _run(args, cleanup)


def _run(args: argparse.Namespace, cleanup: contextlib.ExitStack) -> int:
    try:
        report = _audit(args, cleanup)
    except (AuditInputError, ExportError, _SparkFailure) as error:
        return _fail(args, str(error))
    except Exception as error:  # a Spark or I/O failure: the scheduler must see status 2
        first = str(error).splitlines()[0] if str(error) else ""
        return _fail(args, f"{type(error).__name__}: {first}")
    report = dataclasses.replace(report, fail_on=Severity(args.fail_on))
    if args.report is not None:
        from chunkraft.audit.report import write_reports

        write_reports(report, args.report)
    status = report.exit_code()
    print(outcome_line(report) + ("" if args.report is None else f"; report in {args.report}"),
          flush=True)
    for notice in report.notices:
        print(f"audit: note: {notice}", file=sys.stderr, flush=True)
    return status


def outcome_line(report: AuditReport) -> str:
    """The job's one line on stdout: the status, every rule that fired, and what decided
    the exit status."""
    fired = [f"{r.rule_id} ({r.count})" for r in report.rules if r.count]
    status = report.to_json()["status"]
    found = f"found {', '.join(fired)}" if fired else "nothing found"
    return f"audit: {status}: {found}; {report.decision()}"


def _fail(args: argparse.Namespace, message: str) -> int:
    print(f"chunkraft audit: error: {message}", file=sys.stderr)
    if args.report is not None:
        try:
            from chunkraft.audit.report import write_error_report

            write_error_report(args.report, message, engine=args.engine,
                               snapshot_path=args.snapshot)
        except OSError as error:
            print(f"chunkraft audit: cannot write the error report: {error}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """The spark-submit entry point's main: parses ``argv`` and runs the audit."""
    return run(build_parser().parse_args(argv))
