"""Chaos testing: fault injection (nemesis, network namespaces) and the history checker."""
