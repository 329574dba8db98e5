"""The tokens of a local cluster: ``credentials.json`` (their digests, which every node reads)
and ``tokens.json`` (the tokens themselves, mode 0600, for the launcher, tests and demos).

Both live in the cluster's base directory. The tokens are made once and kept, so a cluster
started again from the same directory authenticates with the same tokens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from chunkraft.local.node_process import write_private
from chunkraft.security import credentials

__all__ = ["add_local_token", "local_tokens"]


def local_tokens(credentials_path: Path, tokens_path: Path,
                 principals: Sequence[str]) -> dict[str, str]:
    """Principal -> token for every one of ``principals``: read from ``tokens_path`` when both
    files exist (a principal it lacks, from an older layout, gets a token added), otherwise
    made anew and both files written."""
    credentials_path.parent.mkdir(parents=True, exist_ok=True)
    if tokens_path.exists() and credentials_path.exists():
        tokens = dict(json.loads(tokens_path.read_text(encoding="utf-8")))
        for principal in principals:
            if principal not in tokens:
                add_local_token(credentials_path, tokens_path, tokens, principal,
                                "LocalCluster")
        return tokens
    tokens = {principal: credentials.generate_token() for principal in principals}
    credentials.write_credentials(credentials_path, [
        credentials.CredentialEntry(principal, credentials.token_digest(token),
                                    credentials.now_text(), "LocalCluster")
        for principal, token in tokens.items()])
    write_private(tokens_path, json.dumps(tokens, indent=2))
    return tokens


def add_local_token(credentials_path: Path, tokens_path: Path, tokens: dict[str, str],
                    principal: str, description: str) -> str:
    """A new token for ``principal`` appended to the credentials file; recorded in ``tokens``
    (and ``tokens_path``) if it is the principal's first."""
    token = credentials.add_token(credentials_path, principal, description)
    tokens.setdefault(principal, token)
    write_private(tokens_path, json.dumps(tokens, indent=2))
    return token
