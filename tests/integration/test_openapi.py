"""schemathesis against the OpenAPI document a real 3-node quorum serves, authenticated.

Every operation of ``/openapi.json`` gets a bounded number of generated requests (hypothesis,
derandomized so CI sees the same examples every run), sent alternately to the leader and to a
follower (so forwarding is exercised too) with the admin's bearer token. Each answer must be:

- no 5xx (a 503 REQUEST_TIMED_OUT is the documented answer to a read asking for a
  ``min_offset`` the node has not applied, and is accepted for such a read only);
- a status code, content type, headers and body the document declares for the operation;
- both ways (schemathesis' positive and negative modes): a request the document calls valid
  is never refused for its form (a 400 INVALID_REQUEST or INVALID_TOPIC_EXCEPTION, 413, 415,
  422, 431; refusals that depend on the cluster's state, such as INVALID_PARTITIONS, are
  answers), and a request that breaks the document is refused (schemathesis'
  ``negative_data_rejection``).

Two rules of the API no JSON Schema keyword states are respected when valid requests are
built (see :func:`whole_numbers`, :func:`distinct_config_names`): an integer is written as a
JSON integer, and a ``configs:alter`` names each key once; a page token must be one the API
issued. Generated requests are steered a little so they reach past the first 404: most v3 requests
use the served cluster id and, in turn, a topic that exists. Failures of every operation are
collected and reported together, each with the request that caused it.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import jsonschema
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from chunkraft.local.local_cluster import LocalCluster
from tests.support.cluster_client import admin_client, new_key

POSITIVE_EXAMPLES = 15
"""Valid requests per operation (about 60 operations: about 35 s)."""
NEGATIVE_EXAMPLES = 6
"""Requests per operation that break the document (wrong types, missing fields...), which must
be refused with a documented 4xx."""
UNPRIVILEGED_EXAMPLES = 5
"""Valid requests per operation from a principal without any ACL: every refusal (403, or a
per-item TOPIC_AUTHORIZATION_FAILED) must be documented too."""
MAX_WAIT_MS = 100
"""Long polls (``wait_ms``) are cut to this, so one example never holds the test for 30 s."""
REQUEST_TIMEOUT = 30.0
SEED_TOPIC = "openapi-seed"
BROKERS = (1, 2, 3)

EXCLUDED: dict[tuple[str, str], str] = {
    # Nothing is excluded: every route can be called with any generated input. (An entry here
    # is (METHOD, path template) -> why it cannot be called safely.)
}

CHANGES_THE_QUORUM: dict[tuple[str, str], str] = {
    ("POST", "/controller/v1/quorum/voters"): "a valid add makes the module's quorum count a "
    "made-up voter toward its majority",
    ("DELETE", "/controller/v1/quorum/voters/{controller_id}"): "a valid remove takes a live "
    "voter out of the module's quorum",
}
"""Routes whose *valid* requests from the admin would change the quorum the other tests run
on: only their refusals (invalid input, and every request of a principal without ACLs) are
generated here; their valid answers are checked on quorums of their own
(tests/integration/test_quorum_membership.py, tests/unit/api/test_quorum_voters.py)."""

CHECKS = [status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance, negative_data_rejection]


def follower_of(cluster: LocalCluster, leader: int) -> int:
    return next(node_id for node_id in sorted(cluster.nodes) if node_id != leader)


def prepare(cluster: LocalCluster) -> str:
    """Unfenced brokers and one topic, so generated requests can succeed; the cluster id."""
    leader = cluster.wait_ready(60.0)
    quorum = httpx.get(f"{cluster.nodes[leader].url}/controller/v1/quorum",
                       headers=cluster.headers, timeout=10.0)
    assert quorum.status_code == 200, quorum.text
    cluster_id = str(quorum.json()["cluster_id"])
    with admin_client(cluster) as client:
        client.ensure_unfenced(BROKERS, cluster_id)
        created = client.create_topics([(SEED_TOPIC, 3, 3)], key=new_key())
        assert created.acknowledged, created.describe()
        assert created.body is not None
        assert created.body["topics"][0]["error_code"] in (0, 36), created.describe()
    return cluster_id


def whole_numbers(value: Any) -> Any:
    """``value`` with every float that is a whole number written as an integer.

    JSON Schema's data model counts ``7.0`` as an integer, and schemathesis sends such floats
    for ``"type": "integer"``; chunkraft refuses them on purpose (docs/api.md, Conventions: an
    integer is a JSON integer), a rule no JSON Schema keyword can state. Valid requests are
    sent with the integer spelt as one; tests/unit/api checks the refusal of ``7.0``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    return value


def distinct_config_names(body: Any) -> None:
    """Keeps the first change of each key in a ``configs:alter`` body: Kafka refuses a key
    named twice (INVALID_REQUEST, "Error due to duplicate config keys"), a rule JSON Schema
    cannot state of a list of objects."""
    if isinstance(body, dict) and isinstance(body.get("data"), list):
        seen: set[Any] = set()
        kept = []
        for item in body["data"]:
            name = item.get("name") if isinstance(item, dict) else None
            if name not in seen:
                seen.add(name)
                kept.append(item)
        body["data"] = kept


def steer(case: Any, index: int, cluster_id: str, mode: GenerationMode) -> None:
    """Points a generated request at things that exist, in turn, and keeps it safe and short."""
    if mode is GenerationMode.POSITIVE:
        if isinstance(case.body, dict | list):
            case.body = whole_numbers(case.body)
        if case.path.endswith("configs:alter"):
            distinct_config_names(case.body)
        if isinstance(case.query, dict) and case.query.get("page_token") is not None:
            # A page token is opaque: valid only when this API issued it (base64url of a
            # key); "MA" is the token of key "0" (or 0), which every list accepts.
            case.query["page_token"] = "MA"
    path_parameters = case.path_parameters or {}
    if "cluster_id" in path_parameters and index % 4:
        path_parameters["cluster_id"] = cluster_id  # one in four keeps a random cluster id
    if "topic_name" in path_parameters and index % 2:
        path_parameters["topic_name"] = SEED_TOPIC
    query = case.query
    if isinstance(query, dict):
        wait_ms = query.get("wait_ms")
        if isinstance(wait_ms, int):
            query["wait_ms"] = max(min(wait_ms, MAX_WAIT_MS), -MAX_WAIT_MS)
        elif "min_offset" in query and wait_ms is None:
            query["wait_ms"] = MAX_WAIT_MS  # the default wait is seconds
    body = case.body
    if case.path.endswith("/broker-registration") and isinstance(body, dict):
        # A registration that succeeded would make the controller call its listener (the
        # admin form of CreateChunks asks the partition leader to cut): only ever 127.0.0.1.
        # A host that is not a string is left alone: an invalid request stays invalid.
        for listener in body.get("listeners") or []:
            if isinstance(listener, dict) and isinstance(listener.get("host"), str):
                listener["host"] = "127.0.0.1"


def server_error(case: Any, response: Any) -> str | None:
    """Why ``response`` is an unexpected 5xx, or None."""
    if response.status_code < 500:
        return None
    query = case.query if isinstance(case.query, dict) else {}
    min_offset = query.get("min_offset")
    try:
        name = response.json().get("error_name")
    except ValueError:
        name = None
    if (response.status_code == 503 and name == "REQUEST_TIMED_OUT"
            and isinstance(min_offset, int) and min_offset >= 0):
        return None  # read-your-writes: the node has not applied min_offset within wait_ms
    return f"server error {response.status_code}: {response.text[:500]}"


FORM_ERRORS = frozenset({"INVALID_REQUEST", "INVALID_TOPIC_EXCEPTION"})


def body_schema(document: dict[str, Any], case: Any) -> dict[str, Any] | None:
    """The JSON request body schema the served document declares for ``case``'s operation."""
    operation = document["paths"].get(case.operation.path, {}).get(case.method.lower(), {})
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    return schema if isinstance(schema, dict) else None


def refused_valid(case: Any, response: Any, document: dict[str, Any]) -> str | None:
    """Why a request the document calls valid was refused for its form, or None.

    A body is judged against the document as served, with exact integers: schemathesis turns
    bounds into floats, so a generated Int64 may pass 2^63 - 1 by rounding (9223372036854776000
    for a maximum of 9223372036854775807); such an example is not a valid request."""
    if response.status_code not in (400, 413, 415, 422, 431):
        return None
    schema = body_schema(document, case)
    if schema is not None and not jsonschema.Draft202012Validator(schema).is_valid(case.body):
        return None
    try:
        name = response.json().get("error_name")
    except ValueError:
        name = None
    if response.status_code == 400 and name not in FORM_ERRORS:
        return None  # a refusal that depends on the cluster's state (INVALID_PARTITIONS...)
    return f"valid request refused {response.status_code}: {response.text[:500]}"


def run_operation(operation: Any, mode: GenerationMode, count: int, urls: list[str],
                  headers: dict[str, str], cluster_id: str, failures: list[str],
                  document: dict[str, Any]) -> int:
    """Sends the generated examples of one operation; returns how many were sent."""
    sent = 0
    found: set[str] = set()

    def record(case: Any, base_url: str, problem: str) -> None:
        key = problem.splitlines()[0][:200] if problem else "?"
        if key not in found:  # one report per distinct problem of an operation
            found.add(key)
            curl = case.as_curl_command(headers={"Authorization": "Bearer <admin token>"},
                                        base_url=base_url)
            failures.append(f"{operation.label} ({mode.value}): {problem}\n    request: {curl}")

    @given(case=operation.as_strategy(mode))
    @settings(max_examples=count, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    def examples(case: Any) -> None:
        nonlocal sent
        steer(case, sent, cluster_id, mode)
        base_url = urls[sent % len(urls)]
        sent += 1
        response = case.call(base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT)
        problem = server_error(case, response)
        if problem is None and mode is GenerationMode.POSITIVE:
            problem = refused_valid(case, response, document)
        if problem is not None:
            record(case, base_url, problem)
            return
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (Failure, FailureGroup) as failure:
            record(case, base_url, str(failure).strip()[:1500])

    try:
        examples()
    except Unsatisfiable:
        assert mode is GenerationMode.NEGATIVE, f"{operation.label}: no valid request"
        # an operation without parameters or body cannot be called wrongly
    return sent


def check_every_operation(cluster: LocalCluster, mode: GenerationMode, count: int,
                          token: str | None = None) -> None:
    """Sends ``count`` generated requests of every operation with ``token`` (default the
    admin's) and asserts that every answer is one the document declares."""
    cluster_id = prepare(cluster)
    leader = cluster.wait_ready(60.0)
    urls = [cluster.nodes[leader].url, cluster.nodes[follower_of(cluster, leader)].url]
    schema = schemathesis.openapi.from_url(f"{urls[0]}/openapi.json")  # exempt from auth
    document = httpx.get(f"{urls[0]}/openapi.json", timeout=10.0).json()
    headers = {"Authorization": f"Bearer {token or cluster.admin_token}"}
    failures: list[str] = []
    counts: dict[str, int] = {}
    started = time.monotonic()
    for result in schema.get_all_operations():
        operation = result.ok()
        route = (operation.method.upper(), operation.path)
        if route in EXCLUDED:
            continue
        if route in CHANGES_THE_QUORUM and mode is GenerationMode.POSITIVE and token is None:
            continue
        counts[operation.label] = run_operation(operation, mode, count, urls, headers,
                                                cluster_id, failures, document)
    elapsed = time.monotonic() - started
    assert counts, "the served document has no operation"
    assert not failures, (f"{len(failures)} problem(s) in {len(counts)} operations "
                          f"({elapsed:.0f} s):\n\n" + "\n\n".join(failures))


def test_valid_requests_get_the_answers_the_document_declares(quorum: LocalCluster) -> None:
    check_every_operation(quorum, GenerationMode.POSITIVE, POSITIVE_EXAMPLES)


def test_invalid_requests_are_refused_as_the_document_declares(quorum: LocalCluster) -> None:
    check_every_operation(quorum, GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES)


def test_refusals_of_a_principal_without_acls_are_documented(quorum: LocalCluster) -> None:
    principal = "User:openapi-nobody"
    try:
        token = quorum.token(principal)
    except KeyError:
        token = quorum.add_token(principal)
    leader_url = quorum.nodes[quorum.wait_ready(60.0)].url
    deadline = time.monotonic() + 10.0  # nodes re-read the credentials file within a second
    status = 401
    while status == 401 and time.monotonic() < deadline:
        status = httpx.get(f"{leader_url}/metrics", timeout=10.0,
                           headers={"Authorization": f"Bearer {token}"}).status_code
        time.sleep(0.2)
    assert status == 403, f"{principal}'s token still answers {status}"
    check_every_operation(quorum, GenerationMode.POSITIVE, UNPRIVILEGED_EXAMPLES, token)
