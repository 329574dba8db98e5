"""Tools for the deployment artifacts of ``deploy/``: each host's properties files, and the
kustomize subset that renders ``deploy/kubernetes``."""
