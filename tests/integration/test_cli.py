"""The installed ``chunkraft`` command (the console script next to this Python) against a real
3-node quorum: stdout, stderr and exit codes of ``topics``, ``chunks``, ``acls`` and ``quorum``,
including KIP-1114's two JSON file examples exactly as the KIP prints them.

No broker process runs: the module registers brokers through the RPC surface (as admin, a super
user), and where a broker has something to say (a copy complete) the test says it as that
broker, with that broker's token.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from chunkraft.cli.topics import ALTER_WARNING
from chunkraft.local.local_cluster import LocalCluster, free_ports
from tests.support.cluster_client import ClusterClient, admin_client, new_key
from tests.support.kip1114_files import KIP_ALTER, KIP_CREATE

CHUNKRAFT = str(Path(sys.executable).parent / "chunkraft")
BROKERS = (1, 2, 3, 4, 5, 6, 9, 12)
"""Every broker the KIP's examples name (2, 9, 12 in the create example; 4, 5, 6 in the
alter example)."""

@dataclass
class Cli:
    """Runs the installed command against the module's quorum."""

    cluster: LocalCluster
    tmp: Path

    @property
    def bootstrap(self) -> str:
        """Every controller, the leader first: a command that reads what an earlier command
        (another process) wrote reads it from the leader, which applied it before answering.
        (Within one command, reads pass the write's offset as min_offset instead.)"""
        leader = self.cluster.leader_id()
        nodes = sorted(self.cluster.nodes.values(), key=lambda n: n.node_id != leader)
        return ",".join(node.url for node in nodes)

    def run(self, *argv: str, config: Path | None = None, bootstrap: str | None = None,
            env: dict[str, str] | None = None, timeout: float = 120.0
            ) -> subprocess.CompletedProcess[str]:
        """``chunkraft ARGV --bootstrap-server ... --command-config ...`` (the admin's config
        unless ``config`` is given)."""
        command = [CHUNKRAFT, *argv, "--bootstrap-server", bootstrap or self.bootstrap]
        command += ["--command-config", str(config or self.cluster.command_config_path)]
        return self.raw(command, env=env, timeout=timeout)

    def raw(self, command: list[str], *, env: dict[str, str] | None = None,
            timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        environment = {k: v for k, v in os.environ.items() if k != "CHUNKRAFT_TOKEN"}
        environment.update(env or {})
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=environment, check=False)

    def config_for(self, principal: str) -> Path:
        """A command-config file authenticating as ``principal`` (a new token), once every
        node accepts the token (they re-read the credentials file about once a second)."""
        token = self.cluster.add_token(principal, "test_cli")
        path = self.tmp / f"{principal.replace(':', '_')}-{new_key()[:6]}.properties"
        path.write_text(f"bearer.token={token}\n")
        deadline = time.monotonic() + 30
        for url in self.cluster.urls:
            while httpx.get(f"{url}/v3/clusters", timeout=10,
                            headers={"authorization": f"Bearer {token}"}).status_code == 401:
                assert time.monotonic() < deadline, f"{url} never accepted the new token"
                time.sleep(0.1)
        return path

    def write(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.write_text(text)
        return path


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    assert result.stderr == "", result.stderr
    return result.stdout


def failed(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def prepared(module_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """The module's quorum with brokers registered (at closed ports: no broker answers) and
    unfenced, CLUSTER_ACTION for each broker principal, and the KIP's topics."""
    cluster = module_cluster
    cluster.wait_ready(timeout=60)
    cli = Cli(cluster, tmp_path_factory.mktemp("cli"))
    for broker in BROKERS:
        if broker > 5:
            cluster.add_token(f"User:broker-{broker}", "test_cli")
    principals = [arg for broker in BROKERS for arg in ("--allow-principal",
                                                        f"User:broker-{broker}")]
    ok(cli.run("acls", "--add", "--cluster", "--operation", "ClusterAction", *principals))
    closed = free_ports(len(BROKERS))
    with admin_client(cluster) as client:
        epochs = {}
        for broker, port in zip(BROKERS, closed, strict=True):
            registered = client.register_broker(broker, cluster.cluster_id, key=new_key(),
                                                port=port)
            assert registered.body is not None and registered.body["error_code"] == 0, \
                registered.describe()
            epochs[broker] = registered.body["broker_epoch"]
        for broker, epoch in epochs.items():
            beat = client.heartbeat(broker, epoch, epoch, key=new_key())
            assert beat.body is not None and beat.body["is_fenced"] is False, beat.describe()
    ok(cli.run("topics", "--create", "--topic", "topic1", "--replica-assignment", "1:2:3"))
    ok(cli.run("topics", "--create", "--topic", "topic2", "--partitions", "3",
               "--replication-factor", "3"))
    return cli


@pytest.fixture
def cli(quorum: LocalCluster, prepared: Cli) -> Cli:
    return prepared


# ------------------------------------------------------------------ topics


def test_topic_lifecycle_prints_what_kafka_topics_prints(cli: Cli) -> None:
    assert ok(cli.run("topics", "--create", "--topic", "orders", "--partitions", "3",
                      "--replication-factor", "3")) == "Created topic orders.\n"
    assert "orders\n" in ok(cli.run("topics", "--list"))
    assert ok(cli.run("topics", "--list", "--topic", "ord.*")) == "orders\n"

    lines = ok(cli.run("topics", "--describe", "--topic", "orders")).splitlines()
    assert lines[0].startswith("Topic: orders\tTopicId: ")
    assert lines[0].endswith("\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: ")
    partitions = [line for line in lines if line.startswith("\tTopic: orders\tPartition: ")]
    chunks = [line for line in lines if line.startswith("\t\tChunk: active\tStartOffset: 0\t")]
    assert len(partitions) == 3 and len(chunks) == 3 and len(lines) == 7
    assert all("\tLeader: " in line and "\tReplicas: " in line and "\tIsr: " in line
               for line in partitions)

    assert ok(cli.run("topics", "--alter", "--topic", "orders", "--partitions", "5")) == \
        ALTER_WARNING + "\n"
    described = ok(cli.run("topics", "--describe", "--topic", "orders"))
    assert "\tPartitionCount: 5\t" in described
    assert "\tPartition: 4\t" in described and "\tPriorPartitionEpochs: 0@" in described

    error = failed(cli.run("topics", "--create", "--topic", "orders", "--partitions", "1",
                           "--replication-factor", "1"))
    assert error == ("Error while executing topic command : TOPIC_ALREADY_EXISTS: "
                     "Topic 'orders' already exists.\n")
    assert ok(cli.run("topics", "--create", "--topic", "orders", "--partitions", "1",
                      "--replication-factor", "1", "--if-not-exists")) == ""

    assert ok(cli.run("topics", "--delete", "--topic", "orders")) == ""
    assert failed(cli.run("topics", "--describe", "--topic", "orders")) == \
        ("Error while executing topic command : UNKNOWN_TOPIC_OR_PARTITION: Topic 'orders' "
         "does not exist as expected\n")
    assert failed(cli.run("topics", "--delete", "--topic", "orders")) == \
        ("Error while executing topic command : UNKNOWN_TOPIC_OR_PARTITION: Topic 'orders' "
         "does not exist as expected\n")
    assert ok(cli.run("topics", "--delete", "--topic", "orders", "--if-exists")) == ""
    assert ok(cli.run("topics", "--alter", "--topic", "orders", "--partitions", "9",
                      "--if-exists")) == ""


def test_replica_assignments_on_create_and_alter(cli: Cli) -> None:
    ok(cli.run("topics", "--create", "--topic", "placed", "--replica-assignment", "1:2,2:3"))
    ok(cli.run("topics", "--alter", "--topic", "placed", "--partitions", "3",
               "--replica-assignment", "1:2,2:3,3:4"))
    described = ok(cli.run("topics", "--describe", "--topic", "placed"))
    assert "\tTopic: placed\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n" in described
    assert "\tTopic: placed\tPartition: 2\tLeader: 3\tReplicas: 3,4\tIsr: 3,4\t" in described
    error = failed(cli.run("topics", "--create", "--topic", "bad", "--replica-assignment",
                           "1:77"))
    assert error.startswith("Error while executing topic command : INVALID_REPLICA_ASSIGNMENT")


def test_json_output_is_the_rest_data(cli: Cli) -> None:
    topic = json.loads(ok(cli.run("topics", "--create", "--topic", "as-json", "--partitions",
                                  "2", "--replication-factor", "2", "--output", "json")))
    assert topic["kind"] == "KafkaTopic" and topic["partitions_count"] == 2
    described = json.loads(ok(cli.run("topics", "--describe", "--topic", "as-json",
                                      "--output", "json")))
    assert [p["partition_id"] for p in described[0]["partitions"]] == [0, 1]
    listed = json.loads(ok(cli.run("topics", "--list", "--output", "json")))
    assert "as-json" in {t["topic_name"] for t in listed}
    matched = ok(cli.run("topics", "--describe", "--topic", "as-js.*"))  # a regular expression
    assert matched.startswith("Topic: as-json\t") and matched.count("\nTopic: ") == 0
    everything = ok(cli.run("topics", "--describe"))
    assert "Topic: as-json\t" in everything and "Topic: topic1\t" in everything


def test_writes_through_a_follower_and_reading_them_back_there(cli: Cli) -> None:
    leader = cli.cluster.leader_id()
    follower = next(n.url for n in cli.cluster.nodes.values() if n.node_id != leader)
    assert ok(cli.run("topics", "--create", "--topic", "via-follower", "--partitions", "1",
                      "--replication-factor", "1", bootstrap=follower)) == \
        "Created topic via-follower.\n"
    # acls --add writes (forwarded to the leader), then reads the resource's ACLs back from
    # the follower with the write's offset as min_offset: the new ACL is always there
    added = ok(cli.run("acls", "--add", "--allow-principal", "User:carol", "--operation",
                       "Read", "--topic", "via-follower", bootstrap=follower))
    assert added.endswith(
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=via-follower, "
        "patternType=LITERAL)`:\n"
        " \t(principal=User:carol, host=*, operation=READ, permissionType=ALLOW)\n\n")


# ------------------------------------------------------------------ chunks: the KIP's files


def test_the_kips_create_file_asks_the_leader_brokers_which_do_not_answer(cli: Cli) -> None:
    path = cli.write("kip-create.json", KIP_CREATE)
    result = cli.run("chunks", "create", "--create-chunk-json-file", str(path))
    # Kafka's tools: the reasons, then the summary, all on standard error.
    assert result.stdout == ""
    lines = failed(result).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("Error for partition topic1-0: LEADER_NOT_AVAILABLE: broker ")
    assert lines[1].startswith("Error for partition topic2-2: LEADER_NOT_AVAILABLE: broker ")
    assert lines[2] == "Error while executing chunk command : 2 of 2 chunk creations failed"
    # --dry-run validates the admin form on the controller without asking any broker
    assert ok(cli.run("chunks", "create", "--create-chunk-json-file", str(path),
                      "--dry-run")).splitlines() == [
        "A new active chunk of partition topic1-0 on brokers 1,2,3 is valid (dry run: nothing "
        "changed).",
        "A new active chunk of partition topic2-2 on brokers 2,9,12 is valid (dry run: nothing "
        "changed).",
    ]


def _cut(cli: Cli, start: int, replicas: list[int]) -> None:
    """Cuts topic1-0's active chunk at ``start`` with a create-chunk file that gives offsets."""
    item = {"topic": "topic1", "partition": 0, "replicas": replicas, "startOffset": start,
            "prevEndOffset": start + 4}
    path = cli.write(f"cut-{start}.json", json.dumps({"partitions": [item]}))
    assert ok(cli.run("chunks", "create", "--create-chunk-json-file", str(path))) == (
        f"Created a new active chunk of partition topic1-0 on brokers "
        f"{','.join(map(str, replicas))}.\n")


def _report_in_sync(cli: Cli, moves: dict[int, list[int]], reported: list[float]) -> list[str]:
    """Once topic1-0's chunks of ``moves`` (start offset -> brokers) are moving to those
    brokers, and a second later, each broker reports its copy complete, as itself; appends the
    time of the last report to ``reported``; returns what went wrong, if anything."""
    problems: list[str] = []
    base = f"{cli.cluster.urls[0]}/v3/clusters/{cli.cluster.cluster_id}"
    with httpx.Client(headers=cli.cluster.headers, timeout=10) as http:
        deadline = time.monotonic() + 60
        for start, brokers in moves.items():
            while time.monotonic() < deadline:  # until the command's move is committed
                chunk = http.get(f"{base}/topics/topic1/partitions/0/chunks/{start}").json()
                if set(brokers) <= set(chunk.get("adding_replica_ids") or ()):
                    break
                time.sleep(0.1)
            else:
                return [f"the move of chunk {start} never showed"]
        time.sleep(1.0)  # the command is waiting by now
        epochs = {b["broker_id"]: b["broker_epoch"]
                  for b in http.get(f"{base}/brokers").json()["data"]}
    for start, brokers in moves.items():
        for broker in brokers:
            token = cli.cluster.token(f"User:broker-{broker}")
            with ClusterClient(cli.cluster.urls, token=token) as client:
                outcome = client.write("/chunk-replica-state", {
                    "broker_id": broker, "broker_epoch": epochs[broker], "chunks": [{
                        "topic_name": "topic1", "partition_id": 0, "start_offset": start,
                        "state": "in_sync"}]})
            if not outcome.acknowledged or (outcome.body or {}).get("error_code"):
                problems.append(outcome.describe())
    reported.append(time.monotonic())
    return problems


def test_the_kips_alter_file_with_wait_until_the_brokers_report_their_copies(cli: Cli) -> None:
    # topic1-0 gets inactive chunks starting at 0, 27784 (on 2,3,4) and 289818 (on 1,2,3), so
    # the KIP's file moves two real chunks: 289818 to 4,5,6 and 27784 to 1,2,3.
    _cut(cli, 27784, [2, 3, 4])
    _cut(cli, 289818, [1, 2, 3])
    _cut(cli, 300000, [1, 2, 3])
    path = cli.write("kip-alter.json", KIP_ALTER)
    dry = ok(cli.run("chunks", "alter", "--alter-chunk-json-file", str(path), "--dry-run"))
    assert dry.splitlines()[0] == ("Moving chunk topic1-0 at offset 289818 to brokers 4,5,6 is "
                                   "valid (dry run: nothing changed).")
    problems: list[str] = []
    reported: list[float] = []
    reporter = threading.Thread(target=lambda: problems.extend(
        _report_in_sync(cli, {289818: [4, 5, 6], 27784: [1]}, reported)))
    reporter.start()
    result = cli.run("chunks", "alter", "--alter-chunk-json-file", str(path), "--wait",
                     "--timeout-ms", "60000")
    finished = time.monotonic()
    reporter.join(timeout=90)
    assert not problems, problems
    assert reported and finished >= reported[0]  # it returned only after the last report
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stdout.splitlines() == [
        "Moving chunk topic1-0 at offset 289818 to brokers 4,5,6.",
        "Moving chunk topic1-0 at offset 27784 to brokers 1,2,3.",
    ]
    progress = result.stderr.splitlines()  # not a terminal: a line per change of the count
    assert all(re.fullmatch(r"Moving chunks \[[#.]{30}\] [012]/2 complete", line)
               for line in progress), progress
    assert progress[-1] == "Moving chunks [##############################] 2/2 complete"
    assert 1 <= len(progress) <= 3
    described = ok(cli.run("chunks", "describe", "--topic", "topic1", "--partition", "0"))
    lines = {line.split("\tStartOffset: ")[1].split("\t")[0]: line
             for line in described.splitlines()}
    assert "\tReplicas: 4,5,6\tIsr: 4,5,6" in lines["289818"]
    assert "\tReplicas: 1,2,3\tIsr: 1,2,3" in lines["27784"]
    assert "Adding" not in described and "Removing" not in described
    assert "Chunk: active\tStartOffset: 300000" in lines["300000"]


def test_chunk_items_fail_one_by_one_and_dry_run_changes_nothing(cli: Cli) -> None:
    path = cli.write("mixed.json", """{"partitions": [
        {"topic": "topic2", "partition": 0, "replicas": [1, 2, 3],
         "startOffset": 10, "prevEndOffset": 12},
        {"topic": "no-such-topic", "partition": 0, "replicas": [1, 2, 3],
         "startOffset": 10, "prevEndOffset": 12}]}""")
    before = ok(cli.run("chunks", "describe", "--topic", "topic2"))
    dry = cli.run("chunks", "create", "--create-chunk-json-file", str(path), "--dry-run")
    assert dry.stdout.splitlines() == [
        "A new active chunk of partition topic2-0 on brokers 1,2,3 is valid (dry run: nothing "
        "changed)."]
    reason, summary = failed(dry).splitlines()
    assert reason.startswith("Error for partition no-such-topic-0: UNKNOWN_TOPIC_OR_PARTITION")
    assert summary == "Error while executing chunk command : 1 of 2 chunk creations failed"
    assert ok(cli.run("chunks", "describe", "--topic", "topic2")) == before

    result = cli.run("chunks", "create", "--create-chunk-json-file", str(path))
    assert result.stdout.splitlines()[0] == \
        "Created a new active chunk of partition topic2-0 on brokers 1,2,3."
    assert failed(result).endswith("1 of 2 chunk creations failed\n")
    described = ok(cli.run("chunks", "describe", "--topic", "topic2", "--partition", "0"))
    assert described.splitlines()[0].startswith(
        "Topic: topic2\tPartition: 0\tChunk: inactive\tStartOffset: 0\tStopOffset: 9\t"
        "EndOffset: 12\t")


@pytest.mark.parametrize(("text", "message"), [
    ("{", "is not valid JSON: Expecting property name enclosed in double quotes "
          "(line 1, column 2)"),
    ('{"chunks": [{"topic": "topic1", "partition": 0, "replicas": [1]}]}',
     ': chunks[0]: no "startOffset" (the start offset of the chunk to move)'),
])
def test_a_bad_chunk_file_is_refused_before_anything_is_sent(cli: Cli, text: str,
                                                           message: str) -> None:
    path = cli.write(f"bad-{new_key()[:6]}.json", text)
    error = failed(cli.run("chunks", "alter", "--alter-chunk-json-file", str(path)))
    assert error.startswith("Error while executing chunk command : ")
    assert message in error and error.count("\n") == 1


def test_hostile_chunk_files_are_one_line_not_a_traceback(cli: Cli) -> None:
    """100,000 nested ``[``: one line of error from ``chunks create|alter``, no RecursionError."""
    nested = cli.tmp / "nested.json"
    nested.write_text("[" * 100_000)
    large = cli.tmp / "large.json"
    with large.open("wb") as file:
        file.truncate(50 * 1024 * 1024)
    binary = cli.tmp / "binary.json"
    binary.write_bytes(b'{"chunks": "\xff\x00"}')
    for action, path, problem in (
            ("create", nested, "nests arrays or objects more than 64 deep"),
            ("alter", nested, "nests arrays or objects more than 64 deep"),
            ("alter", large, "is too large: 52428800 bytes, at most 8388608 bytes (8 MiB)"),
            ("create", binary, "is binary, not text (a NUL byte at byte 13, line 1)")):
        assert failed(cli.run("chunks", action, f"--{action}-chunk-json-file", str(path))) == (
            f"Error while executing chunk command : {action}-chunk JSON file {path} "
            f"{problem}\n")


def test_replica_assignments_refused_on_either_side_name_the_kafka_error(cli: Cli) -> None:
    """The client's own refusals print like the controller's, with the error name."""
    prefix = "Error while executing topic command : INVALID_REPLICA_ASSIGNMENT: "
    for assignment, partitions, message in (
            ("1:2:3,4:5:6", 3, "--replica-assignment lists 2 partitions; --partitions 3 needs "
                               "3 (the 1 existing ones, then one per new partition)"),
            ("1:2:3,4:4:5", 2, "--replica-assignment '1:2:3,4:4:5': partition 1 lists a "
                               "broker twice: 4,4,5"),
            ("1:2:3,4:5", 2, "--replica-assignment '1:2:3,4:5': partition 1 has 2 replicas, "
                             "partition 0 has 3"),
            ("1:2:3,4:5:77", 2, "The manual partition assignment includes broker 77, but no "
                                "such broker is registered.")):  # the controller's refusal
        assert failed(cli.run("topics", "--alter", "--topic", "topic1", "--partitions",
                              str(partitions), "--replica-assignment", assignment)) == \
            f"{prefix}{message}\n"


def test_a_missing_chunk_file(cli: Cli) -> None:
    missing = cli.tmp / "missing.json"
    assert failed(cli.run("chunks", "create", "--create-chunk-json-file", str(missing))) == (
        f"Error while executing chunk command : create-chunk JSON file {missing} does not "
        "exist\n")


def test_an_unknown_chunk_and_topic(cli: Cli) -> None:
    path = cli.write("unknown-chunk.json", '{"chunks": [{"topic": "topic1", "partition": 0, '
                                           '"startOffset": 123456789, "replicas": [1, 2, 3]}]}')
    result = cli.run("chunks", "alter", "--alter-chunk-json-file", str(path), "--wait")
    assert result.stdout == ""
    assert failed(result) == (
        "Error for chunk topic1-0 at offset 123456789: UNKNOWN_CHUNK: Partition topic1-0 has "
        "no inactive chunk that starts at offset 123456789.\n"
        "Error while executing chunk command : 1 of 1 chunk reassignments failed\n")
    assert failed(cli.run("chunks", "describe", "--topic", "no-such-topic")) == \
        ("Error while executing chunk command : UNKNOWN_TOPIC_OR_PARTITION: Topic "
         "'no-such-topic' does not exist as expected\n")


# ------------------------------------------------------------------ authentication and ACLs


def test_a_wrong_token_is_a_401_message(cli: Cli) -> None:
    wrong = cli.write("wrong.properties", "bearer.token=crt_not-a-token\n")
    error = failed(cli.run("topics", "--list", config=wrong))
    assert error.startswith("Error while executing topic command : SASL_AUTHENTICATION_FAILED: "
                            "invalid bearer token (give a token: ")
    no_token = cli.raw([CHUNKRAFT, "topics", "--list", "--bootstrap-server", cli.bootstrap])
    assert failed(no_token).startswith(
        "Error while executing topic command : SASL_AUTHENTICATION_FAILED")
    from_env = cli.raw([CHUNKRAFT, "topics", "--list", "--bootstrap-server", cli.bootstrap],
                       env={"CHUNKRAFT_TOKEN": cli.cluster.admin_token})
    assert "topic1\n" in ok(from_env)


def test_acls_grant_and_take_away_what_a_principal_may_do(cli: Cli) -> None:
    alice = cli.config_for("User:alice")
    ok(cli.run("topics", "--create", "--topic", "alices", "--partitions", "1",
               "--replication-factor", "1"))
    denied = failed(cli.run("topics", "--describe", "--topic", "alices", config=alice))
    assert denied.startswith(
        "Error while executing topic command : TOPIC_AUTHORIZATION_FAILED: ")
    assert failed(cli.run("acls", "--list", config=alice)).startswith(
        "Error while executing acl command : CLUSTER_AUTHORIZATION_FAILED: ")
    assert ok(cli.run("topics", "--list", config=alice)) == ""  # lists show what one may see

    added = ok(cli.run("acls", "--add", "--allow-principal", "User:alice", "--operation",
                       "Describe", "--operation", "Alter", "--topic", "alices"))
    pattern = "`ResourcePattern(resourceType=TOPIC, name=alices, patternType=LITERAL)`"
    assert added == (
        f"Adding ACLs for resource {pattern}:\n"
        " \t(principal=User:alice, host=*, operation=ALTER, permissionType=ALLOW)\n"
        " \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n"
        f"Current ACLs for resource {pattern}:\n"
        " \t(principal=User:alice, host=*, operation=ALTER, permissionType=ALLOW)\n"
        " \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n")
    assert ok(cli.run("acls", "--list", "--topic", "alices")) == added.split("\n\n", 1)[1]
    assert "Topic: alices\t" in ok(cli.run("topics", "--describe", "--topic", "alices",
                                           config=alice))
    assert ok(cli.run("topics", "--list", config=alice)) == "alices\n"
    create = failed(cli.run("topics", "--create", "--topic", "not-alices", "--partitions", "1",
                            "--replication-factor", "1", config=alice))
    assert create.startswith("Error while executing topic command : TOPIC_AUTHORIZATION_FAILED")

    removed = ok(cli.run("acls", "--remove", "--force", "--topic", "alices"))
    assert removed.startswith(f"Removed ACLs for resource {pattern}:\n")
    assert removed.count("principal=User:alice") == 2
    assert ok(cli.run("acls", "--list", "--topic", "alices")) == ""
    assert failed(cli.run("topics", "--describe", "--topic", "alices", config=alice)).startswith(
        "Error while executing topic command : TOPIC_AUTHORIZATION_FAILED")


def test_acls_list_by_principal_and_as_json(cli: Cli) -> None:
    ok(cli.run("acls", "--add", "--deny-principal", "User:mallory", "--topic", "secret",
               "--resource-pattern-type", "prefixed", "--operation", "Read"))
    listed = ok(cli.run("acls", "--list", "--principal", "User:mallory"))
    assert listed == (
        "ACLs for principal `User:mallory`\n"
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=secret, "
        "patternType=PREFIXED)`:\n"
        " \t(principal=User:mallory, host=*, operation=READ, permissionType=DENY)\n\n")
    data = json.loads(ok(cli.run("acls", "--list", "--principal", "User:mallory", "--output",
                                 "json")))
    assert [(a["resource_name"], a["operation"], a["permission"]) for a in data] == \
        [("secret", "READ", "DENY")]
    aborted = cli.raw([CHUNKRAFT, "acls", "--remove", "--topic", "secret",
                       "--resource-pattern-type", "prefixed", "--bootstrap-server",
                       cli.bootstrap, "--command-config", str(cli.cluster.command_config_path)])
    assert aborted.returncode == 0 and "Are you sure" in aborted.stdout  # no "y": nothing done
    assert "User:mallory" in ok(cli.run("acls", "--list", "--principal", "User:mallory"))


# ------------------------------------------------------------------ quorum and connections


def test_quorum_describe_with_credentials(cli: Cli) -> None:
    status = ok(cli.run("quorum", "describe", "--status"))
    assert status.splitlines()[0] == f"ClusterId:            {cli.cluster.cluster_id}"
    assert "CurrentVoters:        [1,2,3]\n" in status
    replication = ok(cli.run("quorum", "describe", "--replication")).splitlines()
    assert replication[0].split() == ["NodeId", "LogEndIndex", "Lag", "LastContactMsAgo",
                                      "Status"]
    assert len(replication) == 4
    as_json = json.loads(ok(cli.run("quorum", "describe", "--output", "json")))
    assert as_json["cluster_id"] == cli.cluster.cluster_id
    wrong = cli.write("wrong-quorum.properties", "bearer.token=crt_nope\n")
    assert failed(cli.run("quorum", "describe", "--status", config=wrong)).startswith(
        "Error while executing quorum command : SASL_AUTHENTICATION_FAILED: invalid bearer token")


def test_nothing_listening_is_a_message_not_a_traceback(cli: Cli) -> None:
    (port,) = free_ports(1)
    url = f"http://127.0.0.1:{port}"
    error = failed(cli.run("topics", "--list", bootstrap=url))
    assert error == (f"Error while executing topic command : NETWORK_EXCEPTION: no controller "
                     f"answered: {url}: connection refused\n")
    # one dead bootstrap server among live ones is skipped
    assert "topic1\n" in ok(cli.run("topics", "--list", bootstrap=f"{url},{cli.bootstrap}"))


def test_usage_mistakes_exit_1_with_the_usage(cli: Cli) -> None:
    result = cli.run("topics", "--create", "--topic", "x")
    assert result.stdout == ""
    assert failed(result).startswith("usage: chunkraft topics ")
    assert "--create needs --partitions and --replication-factor" in result.stderr
