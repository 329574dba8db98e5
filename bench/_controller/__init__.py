"""The parts of bench/bench_controller.py, one job each.

Imports go one way, from the top of this list to the bottom (no cycles):

- ``results``: the rows and notes of a run (each printed as a JSON line);
- ``machine``: CPU, peak memory, load and commit, read from /proc and git;
- ``cluster``: setup calls to a chunkraft quorum, with its headers passed explicitly;
- ``load``: one load configuration measured (client, servers, machine) and its medians;
- ``partitions``, ``throughput``, ``failover``, ``restart``: the items;
- ``verdict``: which rows fail the run, and why (pure);
- ``ratios``: ours over each reference, from one run (pure);
- ``report``: the RESULTS.md section and the verdict on the console.

Other bench scripts (``bench_api.py``, ``bench_broker_bootstrap.py``) use ``cluster``,
``load`` and ``machine``.
"""
