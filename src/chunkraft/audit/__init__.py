"""Metadata audits over columnar exports: rules, engines (Spark, pyarrow) and reports.

``docs/audit.md`` describes every rule and how to run an audit locally or on a cluster.
"""
