"""Peers' own test suites run against chunkraft's brokers.

:mod:`tests.peer.kafka_python` runs kafka-python's integration tests (``test/integration`` of
the sdist of the installed version, fetched from PyPI at run time, never kept in this
repository) against a local cluster, through their documented switch for an external broker
(``KAFKA_URI``); :mod:`tests.peer.kafka_python_plugin` is the pytest plugin that makes their
fixture log in with SASL/PLAIN. ``kafka_python_passing.txt`` lists the tests that pass (CI runs
them: ``tests/integration/test_kafka_peer_suite.py``), ``kafka_python_not_passing.txt`` every
other one with its reason; ``python -m tests.peer.kafka_python`` runs the whole suite and
prints a JSON summary.
"""
