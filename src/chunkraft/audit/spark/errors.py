"""A Spark failure as one line naming the input file and the cause, not a Py4J stack trace.

When Spark cannot read an input (a corrupt page, a column of the wrong type), the error reaches
the driver as a ``Py4JJavaError`` or a PySpark ``CapturedException`` wrapping a chain of Java
exceptions, often raised in an executor: the outer ones say which action failed, the inner
ones which file and why. :func:`describe_spark_error` walks that chain (bounded) and says
``cannot read FILE: CAUSE``, naming the first input file any message of the chain mentions
and the cause of the error that named it; without a file, the innermost cause alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["describe_spark_error", "java_chain"]

_MAX_CAUSES = 16
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\.?\s*$")
_CONDITION = re.compile(r"^\[[A-Z_.]+\]\s*")


def _java_of(error: BaseException) -> Any:
    """The Java throwable behind a PySpark error, or None."""
    java = getattr(error, "java_exception", None)  # py4j.protocol.Py4JJavaError
    if java is None:
        java = getattr(error, "_origin", None)  # pyspark.errors CapturedException
    return java


def java_chain(error: BaseException) -> list[tuple[str, str]]:
    """(class name, message) of each Java throwable behind ``error``, outermost first."""
    chain: list[tuple[str, str]] = []
    java = _java_of(error)
    seen: set[int] = set()
    while java is not None and len(chain) < _MAX_CAUSES:
        try:
            ident = int(java.hashCode())
            if ident in seen:
                break
            seen.add(ident)
            name = str(java.getClass().getName())
            message = java.getMessage()
            chain.append((name, "" if message is None else str(message)))
            java = java.getCause()
        except Exception:  # the gateway is gone: keep what was read
            break
    return chain


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = _SQLSTATE.sub("", _CONDITION.sub("", line.strip()))
        if line:
            return line
    return ""


def _mentioned(chain: list[tuple[str, str]], files: Iterable[Path]) -> tuple[int, Path] | None:
    """The innermost link of ``chain`` whose message names one of ``files``, and that file
    (outer links repeat inner messages: a job's abort quotes its task's failure)."""
    candidates = sorted({Path(f) for f in files}, key=lambda p: len(str(p)), reverse=True)
    for index, (_, message) in reversed(list(enumerate(chain))):
        for path in candidates:  # longest first: part-00001 is not part-0000
            if str(path) in message:
                return index, path
    return None


def describe_spark_error(error: BaseException, files: Iterable[Path]) -> str:
    """One line: ``cannot read FILE: CAUSE`` when a message names one of ``files`` (CAUSE: the
    exception that made reading it fail, the one just inside the innermost naming it), else
    ``Spark failed: CAUSE`` (the innermost exception); each as its class and first line."""
    chain = java_chain(error)
    if not chain:
        return f"Spark failed: {type(error).__name__}: {_first_line(str(error))}"
    found = _mentioned(chain, files)
    if found is None:
        name, message = next(((n, m) for n, m in reversed(chain) if _first_line(m)),
                             chain[-1])
        return f"Spark failed: {_cause(name, message)}"
    index, path = found
    name, message = chain[min(index + 1, len(chain) - 1)]
    cause = _cause(name, message)
    for form in (f"file://{path}", f"file:{path}", str(path)):
        cause = cause.replace(form, "the file")
    return f"cannot read {path}: {cause}"


def _cause(name: str, message: str) -> str:
    short = name.rsplit(".", 1)[-1]
    line = _first_line(message)
    return f"{short}: {line}" if line else short
