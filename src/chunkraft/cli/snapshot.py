"""``chunkraft snapshot export``: a controller snapshot or a broker's state as Parquet tables.

Exactly one source: ``--bootstrap-server URL`` downloads the committed image from a controller
(CLUSTER_ACTION on the cluster), ``--snapshot FILE`` reads a ``.checkpoint`` file or a Raft
dump, ``--broker-server URL`` asks a broker agent what it holds on disk (DESCRIBE). ``--out
DIR`` must not exist; it appears whole, with its ``manifest.json``, or not at all (see
``docs/export.md``). Prints one line: the rows per table and the seconds taken. A failure
prints ``Error while executing snapshot command : ...`` and exits 1.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from chunkraft.cli.errors import ToolError
from chunkraft.cli.input_files import load_command_config
from chunkraft.cli.output import fail
from chunkraft.client.command_config import CommandConfigError
from chunkraft.export.manifest import ExportError, Manifest

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["register", "summary"]


def register(commands: Subcommands) -> None:
    """Adds ``export`` to the ``snapshot`` group."""
    parser = commands.add_parser(
        "export", help="export a controller snapshot or a broker's state as Parquet tables",
        description=__doc__.split("\n\n")[0] if __doc__ else None)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--bootstrap-server", "--bootstrap-controller", dest="bootstrap",
                        metavar="URL[,URL...]",
                        help="controller URLs: download and export the committed image")
    source.add_argument("--snapshot", metavar="FILE",
                        help="a snapshot file (<end>-<epoch>.checkpoint) or a Raft dump")
    source.add_argument("--broker-server", dest="broker", metavar="URL[,URL...]",
                        help="a broker agent's URL: export its local state (broker-state)")
    parser.add_argument("--command-config", metavar="FILE",
                        help="properties file with credentials (bearer.token=...); default: "
                             "the CHUNKRAFT_TOKEN environment variable")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the export directory to create (must not exist)")
    parser.add_argument("--signing-key-file", metavar="FILE",
                        help="sign the manifest with HMAC-SHA256 under the key in FILE "
                             "(chunkraft audit --manifest-key-file checks it)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="processes decoding a large snapshot (default: 2 for 32 MiB or "
                             "more on 2+ cores, else 1)")
    parser.set_defaults(handler=_export)


def summary(manifest: Manifest, seconds: float) -> str:
    """The line printed after an export: kind, offset, rows per table, seconds."""
    rows = " ".join(f"{name}={entry.rows}" for name, entry in sorted(manifest.tables.items()))
    return (f"exported {manifest.kind.value} offset={manifest.offset} epoch={manifest.epoch} "
            f"{rows} in {seconds:.1f}s")


def _export(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        if args.workers is not None and args.workers < 1:
            raise ExportError("--workers must be at least 1")
        key = None
        if args.signing_key_file is not None:
            from chunkraft.export.signature import read_key

            key = read_key(args.signing_key_file)
        if args.snapshot is not None:
            from chunkraft.export.snapshot_export import export_snapshot

            manifest = export_snapshot(args.snapshot, args.out, workers=args.workers,
                                       signing_key=key)
        else:
            config = load_command_config(args.command_config)
            if args.bootstrap is not None:
                from chunkraft.export.download import export_from_controller

                manifest = export_from_controller(args.bootstrap, args.out, config,
                                                  workers=args.workers, signing_key=key)
            else:
                from chunkraft.export.broker_export import export_broker_state

                manifest = export_broker_state(args.broker, args.out, config,
                                               signing_key=key)
    except (ExportError, CommandConfigError, ToolError) as error:
        return fail("snapshot", str(error))
    except KeyboardInterrupt:
        return 130
    print(summary(manifest, time.monotonic() - started))
    return 0
