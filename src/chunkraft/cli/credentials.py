"""``chunkraft credentials add | list | revoke``: the bearer tokens of a credentials file.

The file is what a controller's ``auth.credentials.file`` names; it holds SHA-256 digests only,
so ``add`` prints the new token once, and nobody can print it again. Controllers re-read the
file within a second of a change: tokens are added and revoked without a restart. Writes are
atomic (a temporary file renamed over the old one), so a controller never reads half a file;
two ``add`` runs at the very same moment on one file may lose one of the two, so script them
one after the other.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from chunkraft.cli.errors import InputFileError
from chunkraft.cli.input_files import read_input_json
from chunkraft.security.credentials import (
    CredentialsFileError,
    add_token,
    read_credentials,
    revoke_tokens,
)

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["register"]

_PRINCIPAL = re.compile(r"[^\s:;]+:\S(?:[^;]*\S)?")
DIGEST_SHOWN = 12
"""Hex digits of a token's digest that ``list`` shows (and ``revoke --sha256`` accepts)."""


def register(commands: Subcommands) -> None:
    """Adds ``add``, ``list`` and ``revoke`` (under ``chunkraft credentials``)."""
    add = commands.add_parser(
        "add", help="add a token for a principal and print it (once)",
        description="Adds a new random bearer token for --principal to the credentials file "
                    "(created if missing) and prints it: it is stored only as a digest.")
    _file_argument(add)
    add.add_argument("--principal", required=True, help="whose token it is, e.g. User:alice")
    add.add_argument("--description", default="", help="a note kept with the token")
    add.set_defaults(handler=_add)

    listing = commands.add_parser("list", help="list the tokens (principal, digest prefix)")
    _file_argument(listing)
    listing.add_argument("--output", choices=("table", "json"), default="table")
    listing.set_defaults(handler=_list)

    revoke = commands.add_parser(
        "revoke", help="remove tokens by principal and / or digest prefix",
        description="Removes every token of --principal, or the token whose digest starts "
                    "with --sha256 (as `list` shows it), or both conditions at once.")
    _file_argument(revoke)
    revoke.add_argument("--principal", help="revoke this principal's tokens")
    revoke.add_argument("--sha256", help="revoke the token whose digest starts with this")
    revoke.set_defaults(handler=_revoke)


def _file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file", type=Path, required=True,
                        help="the credentials file (a controller's auth.credentials.file)")


def _vet(path: Path) -> None:
    """Refuses (InputFileError) a credentials file that is too large, not UTF-8 or nested
    deeper than any credentials file, before :mod:`chunkraft.security.credentials` parses it
    (its reader has no such bounds). A missing file is fine: ``add`` creates it."""
    if os.path.lexists(path):
        read_input_json(path, "credentials file")


def _fail(message: str) -> int:
    print(f"Error while executing credentials command : {message}", file=sys.stderr)
    return 1


def _add(args: argparse.Namespace) -> int:
    if not _PRINCIPAL.fullmatch(args.principal):
        return _fail(f"{args.principal!r} is not a principal of the form Type:name "
                     "(User:alice)")
    try:
        _vet(args.file)
        token = add_token(args.file, args.principal, args.description)
    except (CredentialsFileError, InputFileError, OSError) as error:
        return _fail(str(error))
    print(token)
    print(f"added a token for {args.principal} to {args.file}; it is shown only this once. "
          "Controllers accept it within a second.", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    try:
        _vet(args.file)
        entries = read_credentials(args.file)
    except (CredentialsFileError, InputFileError) as error:
        return _fail(str(error))
    if args.output == "json":
        print(json.dumps([{"principal": e.principal, "sha256": e.sha256, "created": e.created,
                           "description": e.description} for e in entries], indent=2))
        return 0
    rows = [("PRINCIPAL", "SHA256", "CREATED", "DESCRIPTION")] + [
        (e.principal, e.sha256[:DIGEST_SHOWN], e.created, e.description) for e in entries]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
              + "  " + row[3])
    return 0


def _revoke(args: argparse.Namespace) -> int:
    if args.principal is None and not args.sha256:
        return _fail("give --principal or --sha256 (or both)")
    if args.sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{4,64}", args.sha256):
        return _fail(f"--sha256 {args.sha256!r} is not 4 to 64 hex digits")
    try:
        _vet(args.file)
        if args.sha256:
            matching = [e for e in read_credentials(args.file)
                        if e.sha256.startswith(args.sha256.lower())
                        and args.principal in (None, e.principal)]
            if len(matching) > 1:
                return _fail(f"--sha256 {args.sha256} matches {len(matching)} tokens; give "
                             "more digits")
        removed = revoke_tokens(args.file, principal=args.principal, sha256_prefix=args.sha256)
    except (CredentialsFileError, InputFileError, OSError) as error:
        return _fail(str(error))
    if not removed:
        return _fail("no token matched")
    for entry in removed:
        print(f"revoked {entry.principal} {entry.sha256[:DIGEST_SHOWN]}")
    return 0
