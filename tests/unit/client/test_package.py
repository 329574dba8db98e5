"""The package ``chunkraft.client``: its public names and the example of its docstring."""

from __future__ import annotations

import doctest
import importlib

import chunkraft.client


def test_the_docstring_example_runs() -> None:
    result = doctest.testmod(chunkraft.client, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3
    assert result.failed == 0


def test_every_public_name_imports_from_the_package() -> None:
    from chunkraft.client import AdminClient, Consumer, Producer, RecordMetadata

    assert (Producer.__name__, Consumer.__name__, AdminClient.__name__) == (
        "Producer", "Consumer", "AdminClient")
    assert RecordMetadata.__module__.startswith("chunkraft.client.")
    package = importlib.import_module("chunkraft.client")
    for name in package.__all__:
        assert getattr(package, name) is not None, name
    assert set(package.__all__) <= set(dir(package))


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        chunkraft.client.Nope  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as error:
        assert "Nope" in str(error)
    else:
        raise AssertionError("chunkraft.client.Nope did not raise")
