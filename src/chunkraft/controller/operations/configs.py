"""Configuration operations: incremental_alter_configs, alter_configs (legacy), describe_configs,
and the config checks create_topics shares (:func:`topic_config_records`).

Each is a pure function of (committed image, request) -> ControllerResult. Each resource
succeeds or fails on its own, all its keys or none; a change that leaves a key as it is writes
nothing, so repeating a request writes nothing. The checks, per resource, in Kafka's order
(``ControllerApis``, ``ConfigurationControlManager``):

1. a resource named twice in one request -> INVALID_REQUEST "Duplicate resource.", answered
   once;
2. a resource type other than topic (2) or broker (4) -> INVALID_REQUEST;
3. authorization (``refusal``): TOPIC_AUTHORIZATION_FAILED / CLUSTER_AUTHORIZATION_FAILED,
   before the resource is looked at, so a refusal does not say whether a topic exists;
4. the name: an empty topic name -> INVALID_REQUEST, a topic that does not exist ->
   UNKNOWN_TOPIC_OR_PARTITION; a broker name that is neither ``""`` nor a broker id ->
   INVALID_REQUEST;
5. a key named twice -> INVALID_REQUEST;
6. each key, in request order: unknown for the resource type, a value its type or range
   refuses, a null value to set, APPEND / SUBTRACT on a key that is not a LIST ->
   INVALID_CONFIG with Kafka's message (:mod:`chunkraft.configs.keys`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from chunkraft.configs.keys import (
    BROKER_KEYS,
    TOPIC_KEYS,
    ConfigKey,
    ConfigType,
    InvalidConfigError,
    broker_key,
    topic_key,
)
from chunkraft.configs.resolve import ConfigSource, Resolved, resolve_broker, resolve_topic
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.record_budget import RecordBudget
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.configs import (
    AlterConfigsRequest,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
    DescribeConfigsEntry,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    OpType,
)
from chunkraft.records import BROKER_RESOURCE, TOPIC_RESOURCE, ConfigRecord

__all__ = [
    "CONFIG_TYPE_CODES",
    "Refusal",
    "alter_configs",
    "describe_configs",
    "incremental_alter_configs",
    "topic_config_records",
]

Refusal = Callable[[int, str], ApiException | None]
"""The authorization of one resource ``(resource_type, resource_name)``: the refusal to answer
it with, or None if the caller may act on it. Bound by the API layer to a principal and the
image the operation reads (:mod:`chunkraft.api.config_access`)."""

CONFIG_TYPE_CODES = {ConfigType.BOOLEAN: 1, ConfigType.STRING: 2, ConfigType.INT: 3,
                     ConfigType.LONG: 5, ConfigType.LIST: 7}
"""Kafka's DescribeConfigsResponse ConfigType codes."""

_DUPLICATE_KEYS = "Error due to duplicate config keys"


def _allow_all(resource_type: int, resource_name: str) -> ApiException | None:
    return None


class _Change(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str | None: ...


# ------------------------------------------------------------------ resources


class _Resource:
    """A config resource that passed steps 2 and 4: its keys, its stored values, and the
    effective value a key inherits."""

    def __init__(self, image: MetadataImage, resource_type: int, name: str) -> None:
        self.type = resource_type
        self.name = name
        self.image = image
        _check_type(resource_type)
        if resource_type == TOPIC_RESOURCE:
            if not name:
                raise Errors.INVALID_REQUEST.exception("Default topic resources are not allowed.")
            if image.topics.get_by_name(name) is None:
                raise Errors.UNKNOWN_TOPIC_OR_PARTITION.exception(
                    f"The topic '{name}' does not exist.")
            self.broker_id: int | None = None
        else:
            self.broker_id = _broker_id(name)
        self.stored: Mapping[str, str] = image.configs.values(resource_type, name)

    @property
    def is_topic(self) -> bool:
        return self.type == TOPIC_RESOURCE

    @property
    def own_source(self) -> ConfigSource:
        """The source of a value set on this resource itself."""
        if self.is_topic:
            return ConfigSource.DYNAMIC_TOPIC_CONFIG
        if self.broker_id is None:
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        return ConfigSource.DYNAMIC_BROKER_CONFIG

    def key(self, name: str) -> ConfigKey:
        try:
            return topic_key(name) if self.is_topic else broker_key(name)
        except InvalidConfigError as exc:
            raise Errors.INVALID_CONFIG.exception(str(exc)) from None

    def all_keys(self) -> list[str]:
        return sorted(TOPIC_KEYS if self.is_topic else BROKER_KEYS)

    def resolved(self, name: str) -> Resolved:
        if self.is_topic:
            return resolve_topic(self.image.configs, self.name, name)
        return resolve_broker(self.image.configs, name, broker_id=self.broker_id)

    def records(self, wanted: Mapping[str, str]) -> list[ConfigRecord]:
        """The records that make this resource's stored keys exactly ``wanted``."""
        return [ConfigRecord(self.type, self.name, name, wanted.get(name))
                for name in sorted(set(self.stored) | set(wanted))
                if self.stored.get(name) != wanted.get(name)]


def _check_type(resource_type: int) -> None:
    if resource_type not in (TOPIC_RESOURCE, BROKER_RESOURCE):
        raise Errors.INVALID_REQUEST.exception(
            f"Unsupported resource type {resource_type}: configurations are set on topics "
            f"({TOPIC_RESOURCE}) and brokers ({BROKER_RESOURCE}).")


def _broker_id(name: str) -> int | None:
    """None for the cluster default (``""``), else the broker id ``name`` spells."""
    if name == "":
        return None
    if name.isascii() and name.isdigit() and str(int(name)) == name:
        return int(name)
    raise Errors.INVALID_REQUEST.exception(
        f"Invalid broker name {name!r}: a broker config resource is named by a broker id (a "
        "non-negative integer), or empty for the default of every broker.")


def _check_value(key: ConfigKey, value: str | None, resource: _Resource) -> str:
    if value is None:
        kind = "topic" if resource.is_topic else "broker"
        raise Errors.INVALID_CONFIG.exception(
            f"Null value not supported for {kind} configs: {key.name}")
    try:
        return key.check(value)
    except InvalidConfigError as exc:
        raise Errors.INVALID_CONFIG.exception(str(exc)) from None


def _unique_keys(changes: Iterable[_Change]) -> None:
    names = Counter(change.name for change in changes)
    if any(count > 1 for count in names.values()):
        raise Errors.INVALID_REQUEST.exception(_DUPLICATE_KEYS)


def _items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


# ------------------------------------------------------------------ the alter operations


Altered = Callable[[_Resource], dict[str, str]]
"""The stored keys one resource should have after the change (raises ApiException)."""


def _alter(image: MetadataImage, resources: Sequence[tuple[int, str, Altered]],
           validate_only: bool, refusal: Refusal
           ) -> tuple[list[ConfigRecord], list[AlterConfigsResourceResponse]]:
    counts = Counter((resource_type, name) for resource_type, name, _ in resources)
    answered: set[tuple[int, str]] = set()
    budget = RecordBudget()
    records: list[ConfigRecord] = []
    responses: list[AlterConfigsResourceResponse] = []
    for resource_type, name, altered in resources:
        if (resource_type, name) in answered:
            continue
        answered.add((resource_type, name))
        try:
            if counts[(resource_type, name)] > 1:
                raise Errors.INVALID_REQUEST.exception("Duplicate resource.")
            _check_type(resource_type)
            refused = refusal(resource_type, name)
            if refused is not None:
                raise refused
            resource = _Resource(image, resource_type, name)
            changed = resource.records(altered(resource))
            budget.check(len(changed), f"Altering the configs of {name!r}")
            budget.spend(len(changed))
        except ApiException as exc:
            responses.append(AlterConfigsResourceResponse(
                error_code=exc.code, error_message=exc.message, resource_type=resource_type,
                resource_name=name))
            continue
        records.extend(changed)
        responses.append(AlterConfigsResourceResponse(resource_type=resource_type,
                                                      resource_name=name))
    return ([] if validate_only else records), responses


def incremental_alter_configs(image: MetadataImage, request: IncrementalAlterConfigsRequest, *,
                              refusal: Refusal = _allow_all
                              ) -> ControllerResult[IncrementalAlterConfigsResponse]:
    """IncrementalAlterConfigs: one ConfigRecord per key whose stored value changes.

    SET stores the checked value; DELETE removes the key (the value then comes from the next
    level; deleting a key that is not set changes nothing); APPEND adds the items of the value
    not already in the list and SUBTRACT removes them, starting from the key's effective value
    (the resource's own, else the one it inherits). Checks: the module docstring.
    """

    def bind(configs: Sequence[_IncrementalChange]) -> Altered:
        def altered(resource: _Resource) -> dict[str, str]:
            _unique_keys(configs)
            wanted = dict(resource.stored)
            for change in configs:
                key = resource.key(change.name)
                wanted_value = _incremental(resource, key, change, wanted)
                if wanted_value is None:
                    wanted.pop(key.name, None)
                else:
                    wanted[key.name] = wanted_value
            return wanted

        return altered

    records, responses = _alter(
        image, [(r.resource_type, r.resource_name, bind(r.configs)) for r in request.resources],
        request.validate_only, refusal)
    return ControllerResult.of(IncrementalAlterConfigsResponse(responses=tuple(responses)),
                               records)


class _IncrementalChange(_Change, Protocol):
    @property
    def config_operation(self) -> int: ...


def _incremental(resource: _Resource, key: ConfigKey, change: _IncrementalChange,
                 wanted: Mapping[str, str]) -> str | None:
    """The key's stored value after ``change`` (None: not stored)."""
    operation = OpType(change.config_operation)
    if operation is OpType.SET:
        return _check_value(key, change.value, resource)
    if operation is OpType.DELETE:
        return None
    if key.type is not ConfigType.LIST:
        verb = "append" if operation is OpType.APPEND else "subtract"
        raise Errors.INVALID_CONFIG.exception(
            f"Config value {verb} is not allowed for config key: {key.name}")
    if change.value is None:
        _check_value(key, None, resource)
    assert change.value is not None
    current = wanted.get(key.name)
    items = _items(current if current is not None else resource.resolved(key.name).value)
    given = _items(change.value)
    if operation is OpType.APPEND:
        items.extend(item for item in dict.fromkeys(given) if item not in items)
    else:
        items = [item for item in items if item not in given]
    return _check_value(key, ",".join(items), resource)


def alter_configs(image: MetadataImage, request: AlterConfigsRequest, *,
                  refusal: Refusal = _allow_all) -> ControllerResult[AlterConfigsResponse]:
    """Legacy AlterConfigs: each resource's stored keys become exactly the ones given (the
    others are deleted). Checks: the module docstring (a null value -> INVALID_CONFIG)."""

    def bind(resource_configs: Sequence[_Change]) -> Altered:
        def altered(resource: _Resource) -> dict[str, str]:
            _unique_keys(resource_configs)
            wanted: dict[str, str] = {}
            for change in resource_configs:
                key = resource.key(change.name)
                wanted[key.name] = _check_value(key, change.value, resource)
            return wanted

        return altered

    records, responses = _alter(
        image, [(r.resource_type, r.resource_name, bind(r.configs)) for r in request.resources],
        request.validate_only, refusal)
    return ControllerResult.of(AlterConfigsResponse(responses=tuple(responses)), records)


def topic_config_records(image: MetadataImage, topic: str, configs: Sequence[_Change]
                         ) -> list[ConfigRecord]:
    """The ConfigRecords of a topic being created with ``configs`` (INVALID_REQUEST for a key
    named twice, INVALID_CONFIG for an unknown key or a bad or null value)."""
    _unique_keys(configs)
    records = []
    for change in configs:
        try:
            key = topic_key(change.name)
        except InvalidConfigError as exc:
            raise Errors.INVALID_CONFIG.exception(str(exc)) from None
        if change.value is None:
            raise Errors.INVALID_CONFIG.exception(
                f"Null value not supported for topic configs: {key.name}")
        try:
            value = key.check(change.value)
        except InvalidConfigError as exc:
            raise Errors.INVALID_CONFIG.exception(str(exc)) from None
        records.append(ConfigRecord(TOPIC_RESOURCE, topic, key.name, value))
    return records


# ------------------------------------------------------------------ describe_configs


def describe_configs(image: MetadataImage, request: DescribeConfigsRequest, *,
                     refusal: Refusal = _allow_all) -> ControllerResult[DescribeConfigsResponse]:
    """DescribeConfigs, a read (no records): per resource, its keys with their effective
    values, sources and (if asked) synonyms and documentation.

    The keys: those asked for (``configuration_keys``; an unknown one -> INVALID_CONFIG), else
    every key of the resource type with ``include_all``, else only the keys set on the
    resource itself. Checks: steps 2 to 4 of the module docstring, with DESCRIBE_CONFIGS.
    Only brokers know their static properties, so STATIC_BROKER_CONFIG never appears here.
    """
    results = [_describe(image, resource, request, refusal) for resource in request.resources]
    return ControllerResult.of(DescribeConfigsResponse(results=tuple(results)))


def _describe(image: MetadataImage, wanted: DescribeConfigsResource,
              request: DescribeConfigsRequest, refusal: Refusal) -> DescribeConfigsResult:
    try:
        _check_type(wanted.resource_type)
        refused = refusal(wanted.resource_type, wanted.resource_name)
        if refused is not None:
            raise refused
        resource = _Resource(image, wanted.resource_type, wanted.resource_name)
        if wanted.configuration_keys is not None:
            names = list(dict.fromkeys(resource.key(n).name for n in wanted.configuration_keys))
        else:
            names = resource.all_keys()
    except ApiException as exc:
        return DescribeConfigsResult(error_code=exc.code, error_message=exc.message,
                                     resource_type=wanted.resource_type,
                                     resource_name=wanted.resource_name)
    entries = []
    for name in names:
        resolved = resource.resolved(name)
        if (wanted.configuration_keys is None and not request.include_all
                and resolved.source is not resource.own_source):
            continue
        entries.append(DescribeConfigsEntry(
            name=name, value=resolved.value, is_default=resolved.is_default,
            config_source=int(resolved.source),
            synonyms=tuple(DescribeConfigsSynonym(name=s.name, value=s.value,
                                                  source=int(s.source))
                           for s in resolved.synonyms) if request.include_synonyms else (),
            config_type=CONFIG_TYPE_CODES[resolved.key.type],
            documentation=resolved.key.doc if request.include_documentation else None))
    return DescribeConfigsResult(resource_type=resource.type, resource_name=resource.name,
                                 configs=tuple(entries))
