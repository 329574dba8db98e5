"""Every scalar of every protocol message (and REST v3 request body) is strict."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import chunkraft.protocol
from chunkraft.api.v3 import acl_models, config_models
from chunkraft.api.v3 import models as v3_models
from chunkraft.protocol.acls import AclCreation
from chunkraft.protocol.base import Message
from chunkraft.protocol.brokers import BrokerHeartbeatRequest, UnregisterBrokerRequest
from chunkraft.protocol.topics import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)


def _all_subclasses(base: type[BaseModel]) -> Iterator[type[BaseModel]]:
    for sub in base.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


def _models() -> list[type[BaseModel]]:
    for info in pkgutil.iter_modules(chunkraft.protocol.__path__):
        importlib.import_module(f"chunkraft.protocol.{info.name}")
    # The protocol's messages and the API's bodies: what HTTP requests are parsed into.
    found = {m for m in _all_subclasses(Message)
             if m.__module__.startswith(("chunkraft.protocol.", "chunkraft.api."))}
    # Every REST v3 request body, wherever it is declared (models, acl_models, config_models).
    assert acl_models.KafkaAclBody and config_models.AlterConfigsBody  # both modules loaded
    found.update(_all_subclasses(v3_models.RequestBody))
    return sorted(found, key=lambda m: f"{m.__module__}.{m.__qualname__}")


def _lax_scalars(schema: Any, path: str = "") -> Iterator[str]:
    """Paths of int / bool / float schemas in a pydantic core schema that are not strict."""
    if isinstance(schema, dict):
        if schema.get("type") in ("int", "bool", "float") and not schema.get("strict"):
            yield f"{path}: {schema['type']}"
        for key, value in schema.items():
            if key not in ("cls", "metadata"):
                yield from _lax_scalars(value, f"{path}/{key}")
    elif isinstance(schema, list | tuple):
        for index, value in enumerate(schema):
            yield from _lax_scalars(value, f"{path}[{index}]")


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__qualname__)
def test_no_message_field_coerces_scalars(model: type[BaseModel]) -> None:
    assert list(_lax_scalars(model.__pydantic_core_schema__)) == []


def test_the_walk_finds_messages_of_every_module() -> None:
    modules = {m.__module__ for m in _models()}
    assert {"chunkraft.protocol.topics", "chunkraft.protocol.brokers",
            "chunkraft.protocol.data_plane", "chunkraft.api.v3.models"} <= modules


@pytest.mark.parametrize("value", ['"0"', "1", '"yes"', "0", '"false"', "null"])
def test_a_boolean_must_be_a_json_boolean(value: str) -> None:
    with pytest.raises(ValidationError):
        CreatePartitionsRequest.model_validate_json(
            f'{{"topics": [], "validate_only": {value}}}')


@pytest.mark.parametrize("value", ["true", "false", '"7"', "7.0", "7.5"])
def test_an_integer_must_be_a_json_integer(value: str) -> None:
    with pytest.raises(ValidationError):
        UnregisterBrokerRequest.model_validate_json(f'{{"broker_id": {value}}}')
    with pytest.raises(ValidationError):
        BrokerHeartbeatRequest.model_validate_json(
            f'{{"broker_id": 1, "broker_epoch": {value}}}')


@pytest.mark.parametrize("value", ['"2"', "true", "2.0"])
def test_an_acl_enum_is_a_name_or_an_integer_code(value: str) -> None:
    body = ('{"resource_type": %s, "resource_name": "t", "resource_pattern_type": "LITERAL", '
            '"principal": "User:a", "host": "*", "operation": "READ", '
            '"permission_type": "ALLOW"}')
    assert AclCreation.model_validate_json(body % '"topic"').resource_type.name == "TOPIC"
    assert AclCreation.model_validate_json(body % "2").resource_type.name == "TOPIC"
    with pytest.raises(ValidationError):
        AclCreation.model_validate_json(body % value)


def test_proper_values_and_python_construction_still_work() -> None:
    assert CreatePartitionsRequest.model_validate_json(
        '{"topics": [], "validate_only": true}').validate_only is True
    assert UnregisterBrokerRequest.model_validate_json('{"broker_id": 7}').broker_id == 7
    # Containers stay lax: Python code builds tuple fields from lists.
    topic = CreatePartitionsTopic.model_validate(
        {"name": "t", "count": 3, "assignments": [{"broker_ids": [1, 2]}]})
    assert topic.assignments == (CreatePartitionsAssignment(broker_ids=(1, 2)),)
