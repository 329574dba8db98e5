"""``chunkraft quorum describe``: the quorum's status, like ``kafka-metadata-quorum describe``.

``--status`` prints the cluster id, leader, epoch, high watermark and the followers' largest
lag; ``--replication`` one line per voter with its log end index, lag and last contact, as the
leader sees them. Asks any controller: the one given first that answers. ``--command-config``
gives the credentials (describing the quorum needs DESCRIBE on the cluster), ``--output json``
prints the leader's answer as JSON; a failure prints ``Error while executing quorum command :
...`` and exits 1.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from chunkraft.cli.input_files import load_command_config
from chunkraft.cli.output import ToolError, fail, print_json
from chunkraft.client.admin import AdminClient, AdminError
from chunkraft.client.command_config import CommandConfig, CommandConfigError

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["fetch_quorum", "format_replication", "format_status", "register"]


def register(commands: Subcommands) -> None:
    """Adds ``describe`` to the ``quorum`` group."""
    parser = commands.add_parser(
        "describe", help="describe the controller quorum (--status or --replication)",
        description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--bootstrap-server", "--bootstrap-controller", dest="bootstrap",
                        required=True,
                        help="controller URLs, comma-separated (http://127.0.0.1:9090,...)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--status", action="store_true", help="leader, epoch, high watermark")
    what.add_argument("--replication", action="store_true", help="one line per voter")
    parser.add_argument("--command-config", metavar="FILE",
                        help="properties file with credentials (bearer.token=...); default: "
                             "the CHUNKRAFT_TOKEN environment variable")
    parser.add_argument("--output", choices=("table", "json"), default="table",
                        help="table (kafka-metadata-quorum's layout) or json")
    parser.add_argument("--json", dest="output", action="store_const", const="json",
                        help="the same as --output json")
    parser.set_defaults(handler=_describe)


def fetch_quorum(bootstrap: str, timeout: float = 5.0,
                 config: CommandConfig | None = None) -> dict[str, Any]:
    """The quorum as the leader sees it (asked through any controller that answers).

    AdminError when no controller answers, or one refuses (401, 403)."""
    with AdminClient(bootstrap, config, timeout=timeout, retry_for=timeout,
                     max_attempts=4) as client:
        status = client.get("/controller/v1/quorum")
    leader = status.get("leader_id")
    urls = status.get("controller_urls") or {}
    if leader is not None and leader != status.get("node_id") and str(leader) in urls:
        try:  # only the leader knows each follower's progress
            with AdminClient(urls[str(leader)], config, timeout=timeout, retry_for=timeout,
                             max_attempts=1) as leader_client:
                status = leader_client.get("/controller/v1/quorum")
        except (AdminError, ValueError):
            pass  # the follower's own view is still an answer
    return status


def format_status(status: dict[str, Any]) -> str:
    lags = [v["lag"] for v in status["voters"] if v["node_id"] != status["node_id"]
            and v["lag"] is not None]
    contacts = [v["last_contact_ms_ago"] for v in status["voters"]
                if v["node_id"] != status["node_id"] and v["last_contact_ms_ago"] is not None]
    rows = [
        ("ClusterId", status["cluster_id"]),
        ("LeaderId", status["leader_id"]),
        ("LeaderEpoch", status["epoch"]),
        ("HighWatermark", status["high_watermark"]),
        ("MaxFollowerLag", max(lags) if lags else "unknown"),
        ("MaxFollowerLagTimeMs", max(contacts) if contacts else "unknown"),
        ("CurrentVoters", "[" + ",".join(str(v["node_id"]) for v in status["voters"]) + "]"),
        ("CurrentObservers", "[]"),
    ]
    # chunkraft's own lines, after Kafka's: whether this node takes traffic, how long ago its
    # Raft thread last ticked (a stalled thread is not ready; docs/controller.md), and how
    # steady the leader has been.
    if "ready" in status:
        reason = status.get("not_ready_reason")
        rows.append(("Ready", "true" if status["ready"] else f"false ({reason})"))
    lag = status.get("tick_lag_seconds")
    if isinstance(lag, int | float):
        rows.append(("RaftTickLagMs", round(lag * 1000)))
    # How steady the leader is, as the answering node saw it: a quorum that has been steady
    # since that node started shows 1 change and a term that rose by 1 at most.
    led = status.get("leader_for_seconds")
    if isinstance(led, int | float):
        rows.append(("LeaderForMs", round(led * 1000)))
    for row, key in (("LeadershipChanges", "leadership_changes"),
                     ("TermIncrements", "term_increments")):
        if isinstance(status.get(key), int):
            rows.append((row, status[key]))
    return "\n".join(f"{name + ':':<22}{value}" for name, value in rows)


def format_replication(status: dict[str, Any]) -> str:
    header = ("NodeId", "LogEndIndex", "Lag", "LastContactMsAgo", "Status")
    lines = [header]
    for voter in status["voters"]:
        role = "Leader" if voter["node_id"] == status["leader_id"] else "Follower"
        lines.append((
            str(voter["node_id"]),
            "unknown" if voter["log_end_index"] is None else str(voter["log_end_index"]),
            "unknown" if voter["lag"] is None else str(voter["lag"]),
            "unknown" if voter["last_contact_ms_ago"] is None
            else str(voter["last_contact_ms_ago"]),
            role if voter["connected"] or role == "Leader" else f"{role} (disconnected)",
        ))
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                     .rstrip() for row in lines)


def _describe(args: argparse.Namespace) -> int:
    try:
        config = load_command_config(args.command_config)
        status = fetch_quorum(args.bootstrap, config=config)
    except AdminError as error:
        return fail("quorum", error.describe())
    except (CommandConfigError, ToolError, ValueError) as error:
        return fail("quorum", str(error))
    if args.output == "json":
        print_json(status)
    elif args.replication:
        print(format_replication(status))
    else:
        print(format_status(status))
    return 0
