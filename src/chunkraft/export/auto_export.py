"""Every controller snapshot exported automatically (``metadata.snapshot.export.dir``).

After the Raft node has put a new dump in place, :func:`start_dump_export` hard-links it to a
private name (the next dump replaces the file, never the link's inode) and starts a detached,
niced ``python -m chunkraft snapshot export --snapshot <link> --out <dir>/<offset>-<epoch>``
whose wrapper removes the link when the export ends, then prunes complete exports beyond the
newest ``retain``. The caller's thread only links and spawns: it never waits for the export.
Failures are logged by the caller; the child logs its own to ``<dir>/.export.log``.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

from chunkraft.export.directory import remove_partial_exports
from chunkraft.export.manifest import MANIFEST_NAME

__all__ = ["export_name", "prune_exports", "remove_stale_links", "start_dump_export"]

_EXPORT_NAME = re.compile(r"(\d{20})-(\d{10})")
_LINK_PREFIX = ".dump-link-"


def export_name(offset: int, epoch: int) -> str:
    """``<offset:020d>-<epoch:010d>``: sorts by offset as text."""
    return f"{max(offset, 0):020d}-{max(epoch, 0):010d}"


def prune_exports(directory: Path, retain: int) -> list[Path]:
    """Deletes the oldest complete exports of ``directory`` beyond the newest ``retain``, and
    the leftovers of crashed exports; returns what it deleted."""
    complete = sorted(entry for entry in directory.iterdir()
                      if _EXPORT_NAME.fullmatch(entry.name) and (entry / MANIFEST_NAME).is_file())
    removed = complete[:max(len(complete) - max(retain, 1), 0)]
    for entry in removed:
        shutil.rmtree(entry, ignore_errors=True)
    return removed


_CHILD = """
import sys
import time
from pathlib import Path
from chunkraft.cli.main import main
from chunkraft.export.auto_export import prune_exports
from chunkraft.export.directory import remove_partial_exports
link, out, retain = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
try:
    status = main(["snapshot", "export", "--snapshot", str(link), "--out", str(out)])
finally:
    link.unlink(missing_ok=True)
try:
    prune_exports(out.parent, retain)
except OSError as error:
    print(f"pruning old exports failed: {error}", file=sys.stderr)
sys.exit(status)
"""


def start_dump_export(dump: Path, offset: int, epoch: int, directory: Path,
                      retain: int) -> subprocess.Popen[bytes] | None:
    """Starts exporting the dump at ``dump`` (image ``offset``/``epoch``) into ``directory``;
    returns the child (None if that export exists already). Raises OSError if the link or the
    child cannot be made."""
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / export_name(offset, epoch)
    if out.exists():
        return None
    remove_stale_links(directory)
    link = directory / f"{_LINK_PREFIX}{export_name(offset, epoch)}-{secrets.token_hex(4)}"
    os.link(dump, link)
    try:
        log = open(directory / ".export.log", "ab")  # noqa: SIM115 -- handed to the child
        try:
            # The snapshot's name tells a checkpoint; the link is a dump, found by its magic.
            nice = shutil.which("nice")
            return subprocess.Popen(
                [*([nice, "-n", "10"] if nice else []), sys.executable, "-c", _CHILD,
                 str(link), str(out), str(retain)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                close_fds=True)
        finally:
            log.close()
    except BaseException:
        link.unlink(missing_ok=True)
        raise


def remove_stale_links(directory: Path) -> None:
    """Deletes links and temporary directories of exports whose process died (only those
    older than an hour: a running export's link must stay)."""
    limit = time.time() - 3600
    for entry in directory.iterdir():
        if entry.name.startswith(_LINK_PREFIX):
            try:
                if entry.stat().st_mtime < limit:
                    entry.unlink()
            except OSError:
                pass
    if not any(entry.name.startswith(_LINK_PREFIX) for entry in directory.iterdir()):
        remove_partial_exports(directory)
