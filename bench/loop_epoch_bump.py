"""A campaign, not a test: KIP-253's epoch bump under CPU load, repeated on one real cluster.

Each round runs what ``tests/integration/test_broker_data_plane.py``'s
``test_a_produce_with_the_old_partition_count_is_refused_after_create_partitions`` does, on a
topic of its own: create it (1 partition, RF 3), produce to its leader, grow it to 2
partitions, then produce with the old partition count until INVALID_PARTITION_COUNT. A round
fails when any answer on the way is neither 0 nor INVALID_PARTITION_COUNT (the leader did not
change: the epoch bump alone must not refuse a produce). ``--load N`` runs N busy processes
beside it, each stopped (by its PID) when the campaign ends.

    .venv/bin/python bench/loop_epoch_bump.py --rounds 200 --load 2

Prints one JSON line per failing round and a summary line; exits 1 if any round failed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from chunkraft.client.admin import AdminClient
from chunkraft.client.broker_client import BrokerClient
from chunkraft.client.command_config import CommandConfig
from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.integration.test_broker_data_plane import wait_leader
from tests.support.brokers import broker_cluster, wait_until

CONTROLLER_PROPERTIES = {"broker.session.timeout.ms": "3000",
                         "broker.heartbeat.interval.ms": "500"}
BROKER_PROPERTIES = {"broker.heartbeat.interval.ms": "500", "replica.lag.time.max.ms": "3000"}
ROUND_TIMEOUT_S = 30.0


def _burn(until: float) -> None:
    """Keeps one core busy until the monotonic time ``until``."""
    x = 0
    while time.monotonic() < until:
        for _ in range(10_000):
            x += 1


def _records(prefix: str, count: int) -> list[tuple[bytes, bytes, int]]:
    now = int(time.time() * 1000)
    return [(f"{prefix}-{i}".encode(), f"{prefix}-{i}".encode(), now) for i in range(count)]


def one_round(cluster: LocalCluster, admin: AdminClient, topic: str) -> list[int]:
    """The codes answered to the stale produces of one round (the last is 10000)."""
    admin.create_topic(topic, 1, 3)
    leader = wait_leader(cluster, admin, topic, timeout=ROUND_TIMEOUT_S)
    codes: list[int] = []
    with BrokerClient(cluster.broker_url(leader), token=cluster.admin_token,
                      timeout=30) as broker:
        first = broker.produce_records(topic, 0, 1, _records("before", 3))
        if first.error_code != 0:
            return [first.error_code]
        admin.alter_topic_partitions(topic, 2)

        def refused() -> bool:
            answer = broker.produce_records(topic, 0, 1, _records("stale", 1))
            codes.append(answer.error_code)
            return answer.error_code == Errors.INVALID_PARTITION_COUNT.code

        wait_until(refused, "INVALID_PARTITION_COUNT", ROUND_TIMEOUT_S, 0.01)
        after = broker.produce_records(topic, 0, 2, _records("after", 3))
        codes.append(after.error_code)
    return codes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--load", type=int, default=2, help="busy processes beside it")
    parser.add_argument("--max-seconds", type=float, default=1800)
    args = parser.parse_args()
    allowed = {0, Errors.INVALID_PARTITION_COUNT.code}
    failures = 0
    seen: Counter[int] = Counter()
    started = time.monotonic()
    burners = [multiprocessing.Process(target=_burn, args=(started + args.max_seconds,),
                                       daemon=True) for _ in range(args.load)]
    for burner in burners:
        burner.start()
    rounds = 0
    try:
        with tempfile.TemporaryDirectory(prefix="loop-epoch-bump-") as base, \
                broker_cluster(Path(base), properties=CONTROLLER_PROPERTIES,
                               broker_properties=BROKER_PROPERTIES) as cluster, \
                AdminClient(cluster.urls, CommandConfig(token=cluster.admin_token)) as admin:
            for n in range(args.rounds):
                if time.monotonic() - started > args.max_seconds:
                    break
                codes = one_round(cluster, admin, f"growing-{n}")
                rounds += 1
                seen.update(codes)
                if not set(codes) <= allowed or codes[-1] != 0:
                    failures += 1
                    print(json.dumps({"round": n, "codes": codes}), flush=True)
    finally:
        for burner in burners:
            if burner.pid is not None and burner.is_alive():
                burner.terminate()
            burner.join(5)
    print(json.dumps({"rounds": rounds, "failed": failures, "load": args.load,
                      "codes": {str(k): v for k, v in sorted(seen.items())},
                      "seconds": round(time.monotonic() - started, 1)}), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
