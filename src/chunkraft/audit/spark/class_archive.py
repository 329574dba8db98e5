"""A class-data sharing (CDS) archive for the driver JVM of ``chunkraft audit``.

Starting Spark's driver JVM loads and verifies thousands of classes. HotSpot can write the
classes a run loaded to an archive when the JVM exits (``-XX:ArchiveClassesAtExit``) and map
that archive at the next start (``-XX:SharedArchiveFile``). Measured on a 2-core machine
(``bench/bench_spark_start.py``, bench/RESULTS.md): a local[2] session started in 8.0-8.2 s
without the archive and 4.2-4.8 s with it, its first query took 5.3-5.9 s and 3.2-3.4 s;
writing the archive made the one run that wrote it stop 13.6 s later.

The archive is a cache, so it must never break an audit:

- it is keyed by the PySpark version, its jars and the ``java`` binary: an upgrade of either
  makes a new archive instead of feeding the JVM a stale one (HotSpot also checks the class
  path and its own build, and runs without the archive on a mismatch);
- HotSpot crashes (SIGBUS) on a truncated archive, so the JVM writes to a pending file, and
  :meth:`ClassArchive.publish` only renames it into place after the JVM exited with status 0,
  fsynced, with its size recorded beside it; an archive whose size differs from the record
  is never used, and ``-XX:+VerifySharedSpaces`` checks its CRC at start (a mismatch: the JVM
  runs without it);
- should a JVM still fail to start with it, :func:`chunkraft.audit.spark.session.start_session`
  discards the archive and starts without it.

``CHUNKRAFT_SPARK_CDS=0`` turns it off; ``CHUNKRAFT_CACHE_DIR`` moves it (default
``$XDG_CACHE_HOME/chunkraft``, else ``~/.cache/chunkraft``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from chunkraft.audit.report.atomic import write_text_atomic

__all__ = ["CACHE_DIR_ENV", "DISABLE_ENV", "ArchiveMode", "ArchiveOptions", "ClassArchive",
           "cache_dir"]

DISABLE_ENV = "CHUNKRAFT_SPARK_CDS"
CACHE_DIR_ENV = "CHUNKRAFT_CACHE_DIR"

_QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
"""HotSpot prints CDS warnings (an unusable archive, classes it skips) on stdout."""

_STALE_PENDING_S = 3600.0
"""A pending archive this old belongs to a run that died before publishing it."""

_OTHER_INSTALLATION_KEPT_S = 7 * 86400.0
"""Another installation's archive (an older PySpark, another venv) is kept this long after
its publication, so two installations sharing the cache do not keep replacing each other's."""


ArchiveMode = Literal["mapped", "written", "off"]
"""What a driver JVM does with the archive: maps the published one, writes a pending one as it
exits, or runs without."""


class ArchiveOptions(NamedTuple):
    """The driver JVM options for the archive, and what they make the JVM do with it."""

    mode: ArchiveMode
    options: tuple[str, ...]


def cache_dir() -> Path:
    """Where chunkraft keeps caches (see the module docstring)."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "chunkraft"


def _java_binary() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _key() -> str | None:
    """What the archive depends on, hashed; None when PySpark or java is missing."""
    try:
        import pyspark
    except ImportError:
        return None
    java = _java_binary()
    if java is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    facts = [pyspark.__version__, str(java), str(java.stat().st_size),
             str(java.stat().st_mtime_ns)]
    if jars.is_dir():
        facts.extend(f"{p.name}:{p.stat().st_size}" for p in sorted(jars.glob("*.jar")))
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one PySpark + java installation in ``directory``.

    Contract: :meth:`java_options` either maps the published archive (when its recorded size
    matches) or asks the JVM to write a pending one at exit; :meth:`publish`, called only
    after that JVM exited with status 0, makes a complete pending archive the published one
    atomically; :meth:`discard` removes the published one. No method raises on a cache
    problem (an unwritable directory, a vanished file): the audit then runs without it.
    """

    directory: Path
    key: str

    @classmethod
    def for_this_installation(cls) -> ClassArchive | None:
        """The archive for the installed PySpark and java, or None when turned off
        (``CHUNKRAFT_SPARK_CDS=0``) or when either is missing."""
        if os.environ.get(DISABLE_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
            return None
        key = _key()
        return None if key is None else cls(cache_dir() / "spark-cds", key)

    @property
    def path(self) -> Path:
        return self.directory / f"{self.key}.jsa"

    @property
    def _record(self) -> Path:
        return self.directory / f"{self.key}.json"

    @property
    def pending(self) -> Path:
        """Where this process's JVM writes its archive at exit."""
        return self.directory / f"{self.key}.{os.getpid()}.pending"

    def usable(self) -> bool:
        """True when the published archive exists with the size recorded at publication."""
        try:
            recorded = json.loads(self._record.read_text(encoding="utf-8"))["size"]
            return isinstance(recorded, int) and recorded > 0 and \
                self.path.stat().st_size == recorded
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def java_options(self) -> ArchiveOptions:
        """Driver JVM options: map the archive if usable, else write a pending one at exit
        (``off``, no options, if the cache directory cannot be created)."""
        if self.usable():
            # A crash report, should the JVM still fail on the archive, goes here, not to the
            # user's working directory.
            return ArchiveOptions("mapped", (
                f"-XX:SharedArchiveFile={self.path}", "-XX:+VerifySharedSpaces",
                f"-XX:ErrorFile={self.directory}/hs_err_pid%p.log", *_QUIET))
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._remove_stale_pending()
        except OSError:
            return ArchiveOptions("off", ())
        return ArchiveOptions("written", (f"-XX:ArchiveClassesAtExit={self.pending}", *_QUIET))

    def publish(self) -> bool:
        """Makes this process's pending archive the published one (call only after its JVM
        exited with status 0); True if it did."""
        pending = self.pending
        try:
            size = pending.stat().st_size
            if size <= 0:
                pending.unlink(missing_ok=True)
                return False
            with pending.open("rb") as archive:
                os.fsync(archive.fileno())
            os.replace(pending, self.path)
            # The record last: until it names this size, the archive is not used.
            write_text_atomic(self._record, json.dumps(
                {"size": size, "published_at_ms": int(time.time() * 1000)}))
            self._remove_other_installations()
            return True
        except OSError:
            return False

    def discard(self) -> None:
        """Removes the published archive (after a JVM failed to start with it)."""
        for path in (self._record, self.path):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)

    def _remove_stale_pending(self) -> None:
        now = time.time()
        for path in self.directory.glob("*.pending"):
            try:
                if now - path.stat().st_mtime > _STALE_PENDING_S:
                    path.unlink()
            except OSError:
                pass

    def _remove_other_installations(self) -> None:
        """Other installations' archives published over a week ago go."""
        now = time.time()
        for path in [*self.directory.glob("*.jsa"), *self.directory.glob("*.json")]:
            try:
                if path.stem != self.key and now - path.stat().st_mtime > \
                        _OTHER_INSTALLATION_KEPT_S:
                    path.unlink()
            except OSError:
                pass
