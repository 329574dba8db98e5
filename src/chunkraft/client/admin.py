"""AdminClient: a synchronous client of the controllers' REST v3 resources, for the admin tools.

Any controller answers (followers forward writes to the leader), so the client tries the
bootstrap URLs in turn: it moves to the next one on a connection error or timeout and on 421
(not the leader, could not forward), 502, 503 (no quorum, or not caught up with ``min_offset``
yet) and 504. Every write carries an ``Idempotency-Key`` that stays the same across its retries,
so a write whose outcome was unknown (the controller died mid-way) is retried on another
controller and still applies once. Retries are bounded by a deadline (``retry_for``, as Kafka's
``default.api.timeout.ms`` bounds its admin client's), and by an attempt count only when one is
given (a leader election of a few seconds, while a controller restarts, must not exhaust a count
long before the deadline: the 503 NOT_CONTROLLER answers of an election come fast); the client
gives up early when every URL refuses connections twice in a row (a wrong address
should fail in a second, not after the deadline). One connection attempt takes at most
:data:`CONNECT_TIMEOUT_S`, so a controller on a host that is cut off (its packets dropped, no
refusal) leaves time for the others.

Read-your-writes: each write answers ``X-Metadata-Offset``, the offset it committed at; the
client passes the highest offset it has seen as ``min_offset`` to every later read, so a read
sent to a follower waits until that follower has applied the write.

Any other status is final and raises :class:`AdminError` with the Confluent error body's Kafka
error name and message.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from chunkraft.client.command_config import CommandConfig

__all__ = ["AdminClient", "AdminError", "split_bootstrap"]

_RETRIABLE_STATUSES = frozenset({421, 502, 503, 504})
_SUCCESS = frozenset({200, 201, 202, 204})
TOPICS_PAGE = 1000
PARTITIONS_PAGE = 10_000
"""The largest pages the API serves: topics by the thousand; partitions and chunks by ten
thousand (a whole 10,000-partition topic in one request)."""
MAX_PAGES = 10_000
"""Pages one listing may follow (100 million partitions at 10,000 a page)."""
CONNECT_TIMEOUT_S = 10.0
"""The longest one connection attempt may take (Kafka's ``socket.connection.setup.timeout.ms``
default). A controller whose host is cut off drops the SYNs silently; were the whole request
timeout spent on it, the deadline would pass before the other controllers were tried."""


class AdminError(Exception):
    """A request that failed for good.

    ``status`` is the HTTP status (None when no controller answered at all), ``error_name`` the
    Kafka error name of the body (``NETWORK_EXCEPTION`` when nothing answered) and ``message``
    what the controller said.
    """

    def __init__(self, status: int | None, error_name: str, message: str) -> None:
        self.status = status
        self.error_name = error_name
        self.message = message
        super().__init__(self.describe())

    def describe(self) -> str:
        """One line for a person: the Kafka error name, the message and, for 401, a hint."""
        text = f"{self.error_name}: {self.message}" if self.message else self.error_name
        if self.status == 401:
            text += (" (give a token: bearer.token=... in the --command-config file, or "
                     "CHUNKRAFT_TOKEN)")
        return text


def split_bootstrap(bootstrap: str | Sequence[str]) -> list[str]:
    """``"http://a:9090, http://b:9090/"`` -> ``["http://a:9090", "http://b:9090"]``;
    ValueError if no URL remains or one is not http(s)://."""
    parts = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
    urls = [part.strip().rstrip("/") for part in parts if part.strip()]
    if not urls:
        raise ValueError("no bootstrap server given")
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"bootstrap server {url!r} is not an http:// or https:// URL")
    return urls


class AdminClient:
    """REST v3 calls over a list of controller URLs; see the module doc.

    Not thread-safe (one ``httpx.Client``; one AdminClient per thread). ``last_offset`` is the
    highest metadata offset a write or read answered with (-1 before any).
    """

    def __init__(self, bootstrap: str | Sequence[str], config: CommandConfig | None = None, *,
                 timeout: float = 30.0, retry_for: float = 30.0,
                 max_attempts: int | None = None,
                 wait_ms: int = 10_000, transport: httpx.BaseTransport | None = None) -> None:
        self.urls = split_bootstrap(bootstrap)
        self.config = config or CommandConfig()
        self.retry_for = retry_for
        # None: the deadline bounds the retries; the count only guards the loop. A full round
        # of the URLs pauses up to 1 s (backoff), so about retry_for rounds fit before it.
        self.max_attempts = max(1, max_attempts if max_attempts is not None
                                else len(self.urls) * (int(retry_for) + 10))
        self.wait_ms = wait_ms
        self.timeout = timeout
        self.last_offset = -1
        self._next = 0
        self._cluster_id: str | None = None
        verify: Any = True
        if any(url.startswith("https://") for url in self.urls):
            verify = self.config.ssl_context()
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S)),
            headers=self.config.headers(), verify=verify, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the retry loop

    def request(self, method: str, path: str, *, body: Any = None,
                params: dict[str, Any] | None = None) -> tuple[int, Any]:
        """``(status, JSON body or None)`` of the first final answer to ``method path``.

        GETs carry ``min_offset`` (the last offset seen) and ``wait_ms``; other methods carry
        one Idempotency-Key for all their attempts. AdminError on a final error status or when
        no controller answered within the bounds."""
        params = dict(params or {})
        headers: dict[str, str] = {}
        if method == "GET":
            if self.last_offset >= 0:
                params.setdefault("min_offset", self.last_offset)
                params.setdefault("wait_ms", self.wait_ms)
        else:
            headers["Idempotency-Key"] = secrets.token_hex(16)
        deadline = time.monotonic() + self.retry_for
        backoff = 0.05
        refused_in_a_row = 0
        failures: list[str] = []
        last_error: AdminError | None = None
        for _attempt in range(self.max_attempts):
            url = self.urls[self._next % len(self.urls)]
            try:
                answer = self._http.request(method, url + path, json=body, params=params,
                                            headers=headers, timeout=self._attempt_timeout(
                                                deadline))
            except httpx.ConnectError as error:
                refused_in_a_row += 1
                failures.append(f"{url}: {_transport_reason(error)}")
            except httpx.TransportError as error:  # timeouts, resets: the outcome is unknown
                refused_in_a_row = 0
                failures.append(f"{url}: {_transport_reason(error)}")
            else:
                refused_in_a_row = 0
                payload = _json_of(answer)
                offset = answer.headers.get("x-metadata-offset")
                if answer.status_code in _SUCCESS:
                    if offset is not None and offset.lstrip("-").isdigit():
                        self.last_offset = max(self.last_offset, int(offset))
                    return answer.status_code, payload
                last_error = _error_of(answer, payload)
                if answer.status_code not in _RETRIABLE_STATUSES:
                    raise last_error
                failures.append(f"{url}: HTTP {answer.status_code} {last_error.describe()}")
            self._next += 1
            if refused_in_a_row >= 2 * len(self.urls):
                break
            if time.monotonic() + backoff > deadline:
                break
            if self._next % len(self.urls) == 0:  # a full round failed: pause before the next
                time.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
        if last_error is not None and refused_in_a_row == 0:
            raise last_error
        raise AdminError(None, "NETWORK_EXCEPTION",
                         "no controller answered: " + "; ".join(_dedupe(failures)[-4:]))

    def _attempt_timeout(self, deadline: float) -> httpx.Timeout:
        """One attempt's timeout: ``timeout``, but not past the request's ``retry_for``
        deadline (rounded up to whole seconds, at least 1 s, so a last attempt can still be
        answered). Without the cap, a write that could not commit answered only after several
        whole timeouts (121 s seen for a createPartitions under load)."""
        total = min(self.timeout, max(math.ceil(deadline - time.monotonic()), 1))
        return httpx.Timeout(total, connect=min(total, CONNECT_TIMEOUT_S))

    def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON object a GET of ``path`` answers."""
        _status, payload = self.request("GET", path, params=params)
        if not isinstance(payload, dict):
            raise AdminError(None, "UNKNOWN_SERVER_ERROR", f"GET {path}: not a JSON object")
        return payload

    def get_all(self, path: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a paginated list, following ``metadata.next`` (bounded by
        MAX_PAGES; a ``next`` seen before ends the walk, so a server bug cannot loop it)."""
        items: list[dict[str, Any]] = []
        seen: set[str] = set()
        page = self.get(path, params)
        for _ in range(MAX_PAGES):
            items.extend(page.get("data") or [])
            next_url = (page.get("metadata") or {}).get("next")
            if not next_url or next_url in seen:
                break
            seen.add(next_url)
            target = httpx.URL(next_url)  # the same path on whichever controller answers next
            page = self.get(target.path, dict(target.params))
        return items

    def write(self, method: str, path: str, body: Any = None,
              params: dict[str, Any] | None = None) -> Any:
        """The JSON body (None for 204) of a POST / PATCH / DELETE of ``path``."""
        _status, payload = self.request(method, path, body=body, params=params)
        return payload

    # ------------------------------------------------------------------ paths

    def cluster_id(self) -> str:
        """The id of the cluster the controllers serve (asked once, then remembered)."""
        if self._cluster_id is None:
            clusters = self.get("/v3/clusters").get("data")
            if not isinstance(clusters, list) or not clusters or \
                    not isinstance(clusters[0], dict) or "cluster_id" not in clusters[0]:
                raise AdminError(None, "UNKNOWN_SERVER_ERROR",
                                 "GET /v3/clusters did not name a cluster: is this a chunkraft "
                                 "controller?")
            self._cluster_id = str(clusters[0]["cluster_id"])
        return self._cluster_id

    def cluster_path(self, *parts: str | int) -> str:
        """``/v3/clusters/<id>/<part>/<part>...``, each part escaped."""
        tail = "".join("/" + quote(str(part), safe=":") for part in parts)
        return f"/v3/clusters/{quote(self.cluster_id(), safe='')}{tail}"

    # ------------------------------------------------------------------ resources

    def list_topics(self) -> list[dict[str, Any]]:
        return self.get_all(self.cluster_path("topics"), {"page_size": TOPICS_PAGE})

    def get_topic(self, name: str) -> dict[str, Any]:
        return self.get(self.cluster_path("topics", name))

    def create_topic(self, name: str, partitions: int | None, replication_factor: int | None,
                     assignments: list[list[int]] | None = None, *,
                     validate_only: bool = False,
                     configs: dict[str, str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"topic_name": name, "validate_only": validate_only}
        if configs:
            body["configs"] = [{"name": key, "value": value} for key, value in configs.items()]
        if partitions is not None:
            body["partitions_count"] = partitions
        if replication_factor is not None:
            body["replication_factor"] = replication_factor
        if assignments is not None:
            body["replicas_assignments"] = [
                {"partition_id": index, "broker_ids": brokers}
                for index, brokers in enumerate(assignments)]
        answer: dict[str, Any] = self.write("POST", self.cluster_path("topics"), body)
        return answer

    def alter_topic_partitions(self, name: str, count: int, *,
                               validate_only: bool = False) -> dict[str, Any]:
        answer: dict[str, Any] = self.write(
            "PATCH", self.cluster_path("topics", name),
            {"partitions_count": count, "validate_only": validate_only})
        return answer

    def create_partitions(self, topics: list[dict[str, Any]], *, validate_only: bool = False
                          ) -> list[dict[str, Any]]:
        """``topics:create-partitions``: per-topic results."""
        answer = self.write("POST", self.cluster_path("topics:create-partitions"),
                            {"topics": topics, "validate_only": validate_only})
        return list(answer.get("data") or [])

    def delete_topic(self, name: str) -> None:
        self.write("DELETE", self.cluster_path("topics", name))

    def list_partitions(self, topic: str, *, include_chunks: bool = False
                        ) -> list[dict[str, Any]]:
        return self.get_all(self.cluster_path("topics", topic, "partitions"),
                            {"include_chunks": str(include_chunks).lower(),
                             "page_size": PARTITIONS_PAGE})

    def get_partition(self, topic: str, partition: int, *, include_chunks: bool = False
                      ) -> dict[str, Any]:
        return self.get(self.cluster_path("topics", topic, "partitions", partition),
                        {"include_chunks": str(include_chunks).lower()})

    def list_chunks(self, topic: str, partition: int) -> list[dict[str, Any]]:
        return self.get_all(self.cluster_path("topics", topic, "partitions", partition,
                                              "chunks"), {"page_size": PARTITIONS_PAGE})

    def get_chunk(self, topic: str, partition: int, start_offset: int) -> dict[str, Any]:
        return self.get(self.cluster_path("topics", topic, "partitions", partition, "chunks",
                                          start_offset))

    def create_chunks(self, partitions: list[dict[str, Any]], *, validate_only: bool = False
                      ) -> list[dict[str, Any]]:
        """``chunks:create``: per-partition results, in request order."""
        answer = self.write("POST", self.cluster_path("chunks:create"),
                            {"partitions": partitions, "validate_only": validate_only})
        return list(answer.get("data") or [])

    def alter_chunk_assignments(self, chunks: list[dict[str, Any]], *,
                                validate_only: bool = False) -> list[dict[str, Any]]:
        """``chunks:alter-assignments``: per-chunk results, in request order."""
        answer = self.write("POST", self.cluster_path("chunks:alter-assignments"),
                            {"chunks": chunks, "validate_only": validate_only})
        return list(answer.get("data") or [])

    def list_brokers(self) -> list[dict[str, Any]]:
        return self.get_all(self.cluster_path("brokers"))

    def configs_path(self, entity_type: str, entity_name: str | int | None) -> str:
        """The configs collection of a topic (``"topics"``), a broker (``"brokers"``) or, for
        ``"brokers"`` with no name, the cluster default of every broker."""
        if entity_type == "topics":
            if entity_name is None:
                raise ValueError("a topic's configs need its name")
            return self.cluster_path("topics", entity_name, "configs")
        if entity_name is None:
            return self.cluster_path("broker-configs")
        return self.cluster_path("brokers", entity_name, "configs")

    def list_configs(self, entity_type: str, entity_name: str | int | None
                     ) -> list[dict[str, Any]]:
        """Every key of the resource, with its value, source and synonyms."""
        return list(self.get(self.configs_path(entity_type, entity_name)).get("data") or [])

    def get_config(self, entity_type: str, entity_name: str | int | None,
                   name: str) -> dict[str, Any]:
        return self.get(f"{self.configs_path(entity_type, entity_name)}/{quote(name, safe='')}")

    def set_config(self, entity_type: str, entity_name: str | int | None, name: str,
                   value: str) -> None:
        self.write("PUT", f"{self.configs_path(entity_type, entity_name)}/"
                          f"{quote(name, safe='')}", {"value": value})

    def delete_config(self, entity_type: str, entity_name: str | int | None,
                      name: str) -> None:
        self.write("DELETE", f"{self.configs_path(entity_type, entity_name)}/"
                             f"{quote(name, safe='')}")

    def alter_configs(self, entity_type: str, entity_name: str | int | None,
                      changes: list[dict[str, Any]], *, validate_only: bool = False) -> None:
        """``configs:alter``: ``changes`` are ``{name, value, operation}`` (SET, DELETE,
        APPEND, SUBTRACT); all apply or none does."""
        self.write("POST", self.configs_path(entity_type, entity_name) + ":alter",
                   {"data": changes, "validate_only": validate_only})

    def list_acls(self, acl_filter: dict[str, str]) -> list[dict[str, Any]]:
        return self.get_all(self.cluster_path("acls"), acl_filter)

    def create_acl(self, acl: dict[str, str]) -> dict[str, Any]:
        """The KafkaAcl created (or already there)."""
        answer: dict[str, Any] = self.write("POST", self.cluster_path("acls"), acl) or {}
        return answer

    def delete_acls(self, acl_filter: dict[str, str]) -> list[dict[str, Any]]:
        answer = self.write("DELETE", self.cluster_path("acls"), params=acl_filter)
        return list((answer or {}).get("data") or [])


def _json_of(answer: httpx.Response) -> Any:
    if not answer.content:
        return None
    try:
        return answer.json()
    except ValueError:
        return None


def _error_of(answer: httpx.Response, payload: Any) -> AdminError:
    if isinstance(payload, dict) and "error_code" in payload:
        name = payload.get("error_name") or f"error {payload['error_code']}"
        return AdminError(answer.status_code, str(name), str(payload.get("message") or ""))
    text = answer.text.strip().replace("\n", " ")[:200]
    return AdminError(answer.status_code, "UNKNOWN_SERVER_ERROR",
                      f"HTTP {answer.status_code} {answer.reason_phrase}"
                      + (f": {text}" if text else ""))


def _transport_reason(error: httpx.TransportError) -> str:
    text = str(error).strip()
    if isinstance(error, httpx.ConnectError) and "refused" in text.lower():
        return "connection refused"
    if isinstance(error, httpx.TimeoutException):
        return f"timed out ({type(error).__name__})"
    return text or type(error).__name__


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
