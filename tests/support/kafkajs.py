"""kafkajs, the stock Node Kafka client, from the tests: one admin call per run of
tests/kafka_clients/kafkajs/admin.js (installed by ./scripts/bootstrap), bounded in time.

    kafkajs({"brokers": ["127.0.0.1:9092"], "sasl": {"mechanism": "plain", "username": "alice",
             "password": "secret"}, "op": "listTopics"})
    -> {"ok": True, "result": ["orders"]}
    -> {"ok": False, "error": {"type": "TOPIC_ALREADY_EXISTS", "name": "KafkaJSProtocolError",
                               "message": ..., "code": 36, ...}}

admin.js's header lists the operations and the command's optional keys. A Kafka error is a
result (``ok`` false), not an exception: the tests assert on it. KafkajsDriverError is for a run
that gave no result line (a bad command, node missing, a hung client). Thread-safe: each call
is its own process.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any

__all__ = ["KAFKAJS_DIR", "KafkajsDriverError", "kafkajs"]

KAFKAJS_DIR = pathlib.Path(__file__).resolve().parents[1] / "kafka_clients" / "kafkajs"


class KafkajsDriverError(RuntimeError):
    """admin.js ran without printing a result: the command, node or kafkajs is at fault."""


def kafkajs(command: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
    """Runs one kafkajs admin ``command`` and returns its result line, within ``timeout``
    seconds. Without its own ``timeout_ms``, kafkajs's request timeout is a quarter of it (the
    driver gives up at three of them, before this does)."""
    if not (KAFKAJS_DIR / "node_modules" / "kafkajs").is_dir():
        raise KafkajsDriverError(f"kafkajs is not installed in {KAFKAJS_DIR}: run "
                                 "./scripts/bootstrap")
    command = {"timeout_ms": max(1000, min(10_000, int(timeout * 1000 / 4))), **command}
    try:
        done = subprocess.run(["node", "admin.js"], cwd=KAFKAJS_DIR, input=json.dumps(command),
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as late:
        raise KafkajsDriverError(f"kafkajs {command.get('op')} ran past {timeout} s; its "
                                 f"log: {_text(late.stderr)[-2000:]}") from late
    except FileNotFoundError as missing:
        raise KafkajsDriverError("node is not installed (Node 20 is needed)") from missing
    lines = done.stdout.strip().splitlines()
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        raise KafkajsDriverError(
            f"kafkajs {command.get('op')} printed no result (exit {done.returncode}): "
            f"{done.stdout[-1000:]!r}; its log: {done.stderr[-2000:]}") from None
    if done.returncode != 0:
        raise KafkajsDriverError(f"kafkajs refused the command (exit {done.returncode}): "
                                 f"{result.get('error')}")
    return result


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""
