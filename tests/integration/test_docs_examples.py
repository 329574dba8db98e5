"""Every example of docs/api.md (curl), docs/cli.md (``chunkraft``) and docs/getting-started.md,
run as written against a live 3-controller quorum, its answers compared with the documented ones
by shape.

The documents are walked in order, as a reader would type them: ``$ command`` lines (a command
continues while its quotes are open), each followed by the output the document shows. The
variables the documents define (``$URL``, ``$CID``, ``$AUTH``, ``$FOLLOWER``; ``$B``, ``$C``)
name the module's quorum; ``/tmp/h3_...`` paths are files of the test's own directory, and a
``$ cat FILE`` example writes FILE with the content it shows (that is what the reader has).

Shapes, not values (offsets, ids, ports and placements differ from run to run):

- a JSON answer holds every key the document shows, and its ``kind`` and ``error_name`` values
  in the order shown (the document may leave items out with ``...``);
- a line of text matches the documented line with every number, list of numbers and uuid
  allowed to differ (``Replicas: 2,3,4``, ``broker 2 at http://127.0.0.1:9002``);
- ``$ echo $?`` is the exit status of the command before.

For api.md and cli.md no broker process runs (as they say): brokers 1 to 4 are registered at
closed ports through the RPC, and where the story needs a broker to have done something (a copy
complete) the test says it, as :data:`HOOKS` lists. The few examples that cannot run on a shared
quorum are in :data:`SKIPPED`, each with its reason. One module-scoped cluster serves every
document (the topics and ACLs of the first are deleted before the second). getting-started.md
walks last, on the same quorum: the earlier topics deleted, the placeholder brokers unregistered,
and broker 0 a real broker agent (the page writes records, and a cut without offsets is made by
the leader broker); its audit runs the pyarrow engine, as the page does, so no JVM starts.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from chunkraft.cli.main import main
from chunkraft.local.local_cluster import LocalCluster, free_ports
from tests.support.cluster_client import admin_client, new_key

REPOSITORY = Path(__file__).resolve().parents[2]
DOCS = REPOSITORY / "docs"
BIN = str(Path(sys.executable).parent)
COMMAND_TIMEOUT = 60.0


@dataclass
class Example:
    """One ``$ command`` of a document, the output shown after it, and where it is."""

    command: str
    output: list[str]
    line: int
    json_block: str | None = None
    """The last ``json`` block before the command (what ``-d @file`` sends)."""
    block: int = 0
    """The line of the code fence that opens the command's block."""


@dataclass
class Walk:
    """The state of a document's walk: the shell environment, the files, the last status."""

    cluster: LocalCluster
    tmp: Path
    env: dict[str, str]
    status: int = 0
    ran: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: list[tuple[float, int]] = field(default_factory=list)
    """How long each command took, and its line (the slowest are printed)."""


# ------------------------------------------------------------------ parsing


def examples(path: Path) -> Iterator[Example]:
    """The ``$ command`` examples of the document's code blocks, in order."""
    lines = path.read_text().splitlines()
    in_block = False
    language = ""
    last_json: str | None = None
    json_lines: list[str] = []
    block = 0
    index = 0
    while index < len(lines):
        text = lines[index]
        if text.startswith("```"):
            if in_block and language == "json":
                last_json = "\n".join(json_lines)
            in_block, language, json_lines = not in_block, text[3:].strip(), []
            block = index + 1
            index += 1
            continue
        if in_block and language == "json":
            json_lines.append(text)
        if not (in_block and text.startswith("$ ")):
            index += 1
            continue
        start = index
        command = text[2:]
        while _incomplete(command) and index + 1 < len(lines):
            index += 1
            command += "\n" + lines[index]
        output: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].startswith(("$ ", "```")):
            output.append(lines[index])
            index += 1
        yield Example(command.replace("\\\n", " "), output, start + 1, last_json, block)


def _incomplete(command: str) -> bool:
    if command.endswith("\\"):
        return True
    try:
        shlex.split(command, comments=True)
    except ValueError:
        return True  # a quote still open
    return False


# ------------------------------------------------------------------ shapes


_KEY = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:')
_NAMED = re.compile(r'"(kind|error_name)"\s*:\s*"([A-Za-z_]+)"')
_UUID = re.compile(r"\b[A-Za-z0-9_-]{22}\b")
_NUMBERS = re.compile(r"-?\d+(?:[.,]-?\d+)*")


def line_shape(text: str) -> str:
    """A line with its values abstracted: uuids, numbers and lists of numbers, spacing."""
    shape = _UUID.sub("<id>", text)
    shape = _NUMBERS.sub("<n>", shape)
    return " ".join(shape.split())


def keys_and_names(value: Any) -> tuple[set[str], list[tuple[str, str]]]:
    """Every key of a JSON value, and its ``kind`` / ``error_name`` values in order."""
    keys: set[str] = set()
    names: list[tuple[str, str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                keys.add(key)
                if key in ("kind", "error_name") and isinstance(item, str):
                    names.append((key, item))
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return keys, names


def _subsequence(wanted: list[Any], found: list[Any]) -> bool:
    remaining = iter(found)
    return all(any(item == candidate for candidate in remaining) for item in wanted)


def _json_values(text: str) -> list[Any] | None:
    """The JSON values of ``text`` (one or several, one after the other), or None."""
    decoder = json.JSONDecoder()
    values, position, text = [], 0, text.strip()
    try:
        while position < len(text):
            value, position = decoder.raw_decode(text, position)
            values.append(value)
            while position < len(text) and text[position].isspace():
                position += 1
    except ValueError:
        return None
    return values or None


def compare(example: Example, actual: str) -> str | None:
    """Why ``actual`` does not have the documented shape, or None."""
    expected = "\n".join(example.output).strip()
    if not expected:
        return None
    if expected.lstrip().startswith(("{", "[")) and '"' in expected:
        values = _json_values(actual)
        if values is None:
            return f"expected JSON, got {actual[:300]!r}"
        keys: set[str] = set()
        names: list[tuple[str, str]] = []
        for value in values:
            found_keys, found_names = keys_and_names(value)
            keys |= found_keys
            names += found_names
        missing = sorted(set(_KEY.findall(expected)) - keys)
        if missing:
            return f"keys {missing} missing from {actual[:400]!r}"
        wanted = _NAMED.findall(expected)
        if not _subsequence(wanted, names):
            return f"kinds / errors {wanted} not in {names}"
        return None
    shapes = [line_shape(line) for line in actual.splitlines()]
    for line in example.output:
        if line.strip() and line_shape(line) not in shapes:
            return f"no line shaped like {line.strip()!r} in:\n{actual[:1500]}"
    return None


# ------------------------------------------------------------------ running


def run_example(walk: Walk, example: Example, rewrite: Callable[[str], str]) -> None:
    command = rewrite(example.command)
    words = command.split()
    if words[:2] == ["echo", "$?"]:
        shown = "\n".join(example.output).strip()
        if shown != str(walk.status):
            walk.problems.append(f"line {example.line}: exit status {walk.status}, the "
                                 f"document says {shown}")
        return
    if words[0] == "cat" and len(words) == 2:  # the file the reader has, as shown
        Path(words[1]).write_text("\n".join(example.output) + "\n")
        return
    if example.json_block is not None and "-d @" in command:
        name = command.split("-d @", 1)[1].split()[0].strip("'\"")
        if not (walk.tmp / name).exists():
            (walk.tmp / name).write_text(example.json_block)
    started = time.monotonic()
    argv = in_process_argv(command, walk.env)
    if argv is not None:
        walk.status, output = run_in_process(argv)
    else:
        result = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=walk.tmp, env=walk.env,
                                capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
                                check=False)
        walk.status, output = result.returncode, result.stdout
    walk.seconds.append((time.monotonic() - started, example.line))
    walk.ran += 1
    shown = Example(command, [rewrite(line) for line in example.output], example.line)
    problem = compare(shown, output)
    if problem is not None:
        walk.problems.append(f"line {example.line}: $ {example.command}\n  {problem}")


_PLAIN = re.compile(r"[^|;&<>`()*?]*")


def in_process_argv(command: str, env: dict[str, str]) -> list[str] | None:
    """The arguments of a plain ``chunkraft ...`` command (no pipe, redirection or command
    substitution; only ``$VARIABLE`` expansions), to run in this process: the same parser
    and code as the installed command, without a new interpreter per example (seconds each
    on the test machine). Anything else runs in bash."""
    if not command.startswith("chunkraft ") or not _PLAIN.fullmatch(command) \
            or "$(" in command:
        return None
    words = []
    for word in shlex.split(command)[1:]:
        if word.startswith("$"):
            name = word[1:]
            if name not in env:
                return None
            word = env[name]
        elif "$" in word:
            word = re.sub(r"\$([A-Z_]+)", lambda m: env.get(m.group(1), m.group(0)), word)
        words.append(word)
    return words


def run_in_process(argv: list[str]) -> tuple[int, str]:
    """``chunkraft ARGV`` as :func:`chunkraft.cli.main.main` runs it: the exit status, and
    standard output and error together, in the order they were written."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            status = main(argv)
        except SystemExit as exited:  # argparse's usage errors
            code = exited.code
            status = code if isinstance(code, int) else 1
    return status, output.getvalue()


def walk_document(walk: Walk, path: Path, hooks: dict[str, Callable[[Walk], None]],
                  skipped: dict[str, str], rewrite: Callable[[str], str] = lambda c: c
                  ) -> None:
    skipped_block: int | None = None
    for example in examples(path):
        if example.block == skipped_block:
            continue  # a block is one story: what follows a skipped command depends on it
        reason = next((why for part, why in skipped.items() if part in example.command), None)
        if reason is not None:
            skipped_block = example.block
            continue
        for part, hook in hooks.items():
            if part in example.command:
                try:
                    hook(walk)
                except AssertionError as error:
                    walk.problems.append(f"line {example.line}: the hook before it: {error}")
        run_example(walk, example, rewrite)


# ------------------------------------------------------------------ the cluster


BROKERS = (1, 2, 3, 4)


@pytest.fixture(scope="module")
def docs_cluster(module_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[LocalCluster, Path, dict[int, int]]:
    """The module's quorum with brokers 1 to 4 registered at closed ports (no broker runs);
    only 2 and 3 unfenced, so api.md's topics of replication factor 2 are on 2 and 3."""
    cluster = module_cluster
    cluster.wait_ready(timeout=60)
    tmp = tmp_path_factory.mktemp("docs")
    epochs: dict[int, int] = {}
    with admin_client(cluster) as client:
        for broker, port in zip(BROKERS, free_ports(len(BROKERS)), strict=True):
            registered = client.register_broker(broker, cluster.cluster_id, key=new_key(),
                                                port=port)
            assert registered.body is not None and registered.body["error_code"] == 0, \
                registered.describe()
            epochs[broker] = registered.body["broker_epoch"]
        for broker in (2, 3):
            _unfence(cluster, broker, epochs[broker])
    return cluster, tmp, epochs


def _unfence(cluster: LocalCluster, broker: int, epoch: int) -> None:
    with admin_client(cluster) as client:
        beat = client.heartbeat(broker, epoch, epoch, key=new_key())
        assert beat.body is not None and beat.body["is_fenced"] is False, beat.describe()


def _base_env(cluster: LocalCluster) -> dict[str, str]:
    """The test's environment for the commands, which run in the test's directory: the
    installed ``chunkraft`` first on PATH, this checkout's sources on PYTHONPATH (absolute)."""
    env = {k: v for k, v in os.environ.items() if k != "CHUNKRAFT_TOKEN"}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    paths = [str(Path(entry).resolve()) for entry in env.get("PYTHONPATH", "").split(":")
             if entry]
    env["PYTHONPATH"] = ":".join([str(REPOSITORY / "src"), str(REPOSITORY), *paths])
    env["JSON"] = "Content-Type: application/json"
    return env


def _admin_get(cluster: LocalCluster, path: str) -> Any:
    answers = [httpx.get(f"{url}{path}", headers=cluster.headers, timeout=10)
               for url in cluster.urls]
    good = [answer for answer in answers if answer.status_code == 200]
    assert good, [answer.text for answer in answers]
    return good[0].json()


# ------------------------------------------------------------------ docs/api.md


def _cut_orders_0_at_30(walk: Walk) -> None:
    """The partition examples show orders-0 with an inactive chunk: cut it (at 30, so the
    document's own cut at 100 and its UNKNOWN_CHUNK at 50 still hold)."""
    with admin_client(walk.cluster) as client:
        cut = client.create_chunks("orders", 0, broker_ids=[2, 3], start_offset=30,
                                   prev_end_offset=29, start_timestamp=1732230000000,
                                   key=new_key())
        assert cut.body is not None, cut.describe()
        assert cut.body["topics"][0]["partitions"][0]["error_code"] == 0, cut.describe()


def _unfence_broker_1(walk: Walk) -> None:
    """The batch examples assign and move to broker 1."""
    epochs = walk.env["BROKER_EPOCHS"]
    _unfence(walk.cluster, 1, json.loads(epochs)["1"])


API_HOOKS: dict[str, Callable[[Walk], None]] = {
    "partitions/0?include_chunks=true": _cut_orders_0_at_30,
    "topics:create-partitions": _unfence_broker_1,
}
API_SKIPPED: dict[str, str] = {}


def test_every_curl_example_of_api_md_answers_as_documented(
        quorum: LocalCluster, docs_cluster: tuple[LocalCluster, Path, dict[int, int]]) -> None:
    cluster, tmp, epochs = docs_cluster
    leader = cluster.wait_ready(60)
    follower = next(n for n in sorted(cluster.nodes) if n != leader)
    env = _base_env(cluster)
    env.update(URL=cluster.nodes[leader].url, FOLLOWER=cluster.nodes[follower].url,
               CID=cluster.cluster_id, AUTH=f"Authorization: Bearer {cluster.admin_token}",
               BROKER_EPOCHS=json.dumps(epochs))
    walk = Walk(cluster, tmp, env)
    walk_document(walk, DOCS / "api.md", API_HOOKS, API_SKIPPED)
    print("slowest api.md examples (s, line):", sorted(walk.seconds, reverse=True)[:5])
    assert not walk.problems, "\n\n".join(walk.problems)
    assert walk.ran >= 20, f"only {walk.ran} examples ran"


# ------------------------------------------------------------------ docs/cli.md


def _write_files(tmp: Path) -> None:
    """The files cli.md's error examples read, as its prose describes them."""
    (tmp / "h3_wrong.properties").write_text("bearer.token=crt_not-a-token\n")
    (tmp / "h3_nooffset.json").write_text(
        '{"chunks": [{"topic": "orders", "partition": 0, "replicas": [1, 2, 3]}]}\n')
    (tmp / "h3_badjson.json").write_text('{"chunks": [\n  {"topic": "orders" "partition": 0}]}\n')
    h15 = tmp / "h15"
    (h15 / "adir").mkdir(parents=True, exist_ok=True)
    (h15 / "nested.json").write_text("[" * 100_000)
    with (h15 / "big.json").open("wb") as big:
        big.truncate(50 * 1024 * 1024)  # sparse: its size is what the command refuses
    (h15 / "badutf.json").write_bytes(b'{"partitions": [\xff]}')
    (h15 / "binary.bin").write_bytes(b"bearer.token=abc\x00\n")
    (h15 / "bom.properties").write_bytes(b"\xef\xbb\xbfnode.id=1\n")


def _create_topic1(walk: Walk) -> None:
    """The replica-assignment examples alter ``topic1``, one partition on brokers 1, 2, 3."""
    with admin_client(walk.cluster) as client:
        created = client.create_topics([("topic1", 1, 3)], key=new_key())
        assert created.body is not None, created.describe()
        assert created.body["topics"][0]["error_code"] in (0, 36), created.describe()


CLI_SKIPPED = {
    "quorum add-controller": "its block removes controller 1 from the module's quorum and "
    "adds a controller 4 (tests/integration/test_quorum_membership.py runs these commands on "
    "quorums of their own)",
    "--wait": "needs brokers that copy the chunks (tests/integration/test_cli.py reports the "
    "copies as the brokers while the command waits)",
    "chunkraft cluster --dir": "starts a cluster of its own, with broker processes "
    "(tests/integration/test_cluster_command.py, tests/e2e/test_cluster_demo.py)",
    "kill -9": "stops a process of that cluster",
}


def _reset_after_api_md(walk: Walk) -> None:
    """The second document starts afresh: api.md's topics and ACLs go, every broker is
    unfenced, and Alice has a token in the file the document names."""
    cluster = walk.cluster
    base = f"{cluster.nodes[cluster.wait_ready(60)].url}/v3/clusters/{cluster.cluster_id}"
    with httpx.Client(headers=cluster.headers, timeout=30) as http:
        for topic in http.get(f"{base}/topics").json()["data"]:
            deleted = http.delete(f"{base}/topics/{topic['topic_name']}")
            assert deleted.status_code == 204, deleted.text
        removed = http.delete(f"{base}/acls", params={"resource_type": "ANY"})
        assert removed.status_code == 200, removed.text
    epochs = json.loads(walk.env.pop("BROKER_EPOCHS"))
    for broker in BROKERS:  # a heartbeat of an unfenced broker changes nothing
        _unfence(cluster, broker, epochs[str(broker)])
    (walk.tmp / "h3_cluster").mkdir(exist_ok=True)
    token = cluster.add_token("User:alice", "test_docs_examples")
    (walk.tmp / "h3_cluster" / "alice.properties").write_text(f"bearer.token={token}\n")
    deadline = time.monotonic() + 30
    for url in cluster.urls:  # every node re-reads the credentials file within a second
        while httpx.get(f"{url}/v3/clusters", timeout=10,
                        headers={"authorization": f"Bearer {token}"}).status_code == 401:
            assert time.monotonic() < deadline, f"{url} never accepted Alice's token"
            time.sleep(0.1)


def _complete_the_moves(walk: Walk) -> None:
    """The brokers the moves add report their copies in sync, as brokers 2 and 1 did in the
    document's ``--wait`` example (skipped here)."""
    chunks = _admin_get(walk.cluster, f"/v3/clusters/{walk.cluster.cluster_id}/topics/orders/"
                                      "partitions/0/chunks")["data"]
    brokers = {b["broker_id"]: b["broker_epoch"] for b in _admin_get(
        walk.cluster, f"/v3/clusters/{walk.cluster.cluster_id}/brokers")["data"]}
    with admin_client(walk.cluster) as client:
        for chunk in chunks:
            for broker in chunk["adding_replica_ids"]:
                outcome = client.write("/chunk-replica-state", {
                    "broker_id": broker, "broker_epoch": brokers[broker], "chunks": [{
                        "topic_name": "orders", "partition_id": 0,
                        "start_offset": chunk["start_offset"], "state": "in_sync"}]})
                assert outcome.body is not None and not outcome.body.get("error_code"), \
                    outcome.describe()


CLI_HOOKS: dict[str, Callable[[Walk], None]] = {
    "--topic orders --partition 0": _complete_the_moves,
    "--alter --topic topic1 --partitions 3": _create_topic1,
}


def test_every_cli_example_of_cli_md_prints_as_documented(
        quorum: LocalCluster, docs_cluster: tuple[LocalCluster, Path, dict[int, int]]) -> None:
    cluster, tmp, epochs = docs_cluster
    env = _base_env(cluster)
    leader = cluster.wait_ready(60)
    nodes = sorted(cluster.nodes.values(), key=lambda node: node.node_id != leader)
    env.update(B=",".join(node.url for node in nodes), C=str(cluster.command_config_path),
               BROKER_EPOCHS=json.dumps(epochs))
    walk = Walk(cluster, tmp, env)
    _reset_after_api_md(walk)
    _write_files(tmp)
    walk_document(walk, DOCS / "cli.md", CLI_HOOKS, CLI_SKIPPED,
                  rewrite=lambda command: command.replace("/tmp/", f"{tmp}/"))
    print("slowest cli.md examples (s, line):", sorted(walk.seconds, reverse=True)[:8])
    assert not walk.problems, "\n\n".join(walk.problems)
    assert walk.ran >= 50, f"only {walk.ran} examples ran"


# ------------------------------------------------------------------ docs/getting-started.md


GETTING_STARTED_SKIPPED = {
    "chunkraft cluster --dir": "the walk's own quorum plays the cluster the page starts",
}


def _only_broker_0(walk: Walk) -> None:
    """The page's cluster, made from the module's: no topic or ACL of the other documents, the
    placeholder brokers 1 to 4 unregistered, and broker 0 a real broker agent, registered and
    unfenced (the page writes records, and its leader cuts the chunk)."""
    cluster = walk.cluster
    base = f"{cluster.nodes[cluster.wait_ready(60)].url}/v3/clusters/{cluster.cluster_id}"
    with httpx.Client(headers=cluster.headers, timeout=30) as http:
        for topic in http.get(f"{base}/topics").json()["data"]:
            deleted = http.delete(f"{base}/topics/{topic['topic_name']}")
            assert deleted.status_code == 204, deleted.text
    with admin_client(cluster) as client:
        for broker in BROKERS:
            gone = client.write("/unregister-broker", {"broker_id": broker})
            assert gone.body is not None and gone.body["error_code"] in (0, 102), gone.describe()
    cluster.grant_broker_acls()
    cluster.start_broker(0)
    cluster.wait_brokers_ready([0], timeout=60)


def test_the_getting_started_walk_prints_as_documented(
        quorum: LocalCluster, docs_cluster: tuple[LocalCluster, Path, dict[int, int]]) -> None:
    cluster, tmp, _ = docs_cluster
    leader = cluster.wait_ready(60)
    env = _base_env(cluster)
    env.update(B=",".join(cluster.urls), C=str(cluster.command_config_path),
               BROKERS=cluster.broker_url(0), URL=cluster.nodes[leader].url,
               TOKEN=cluster.admin_token)
    walk = Walk(cluster, tmp, env)
    _only_broker_0(walk)
    (tmp / "getting-started").mkdir(exist_ok=True)
    try:
        walk_document(walk, DOCS / "getting-started.md", {}, GETTING_STARTED_SKIPPED,
                      rewrite=lambda command: command.replace("/tmp/", f"{tmp}/"))
    finally:
        cluster.stop_broker(0)
    print("slowest getting-started.md examples (s, line):",
          sorted(walk.seconds, reverse=True)[:5])
    assert not walk.problems, "\n\n".join(walk.problems)
    assert walk.ran >= 10, f"only {walk.ran} examples ran"
