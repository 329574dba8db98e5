"""The web console: ``/ui`` on every controller.

Pages for the cluster, brokers, topics (with each partition's chunk timeline), configurations,
ACLs and the latest audit report, served from the controller's own process behind its own
authentication. A person logs in once with a bearer token (or a TLS client certificate) and
gets a session cookie (:mod:`.sessions`, :mod:`.session_middleware`); every read the pages make
is filtered by the principal's ACLs (:mod:`.views`), and every change goes through the REST v3
API with the cookie and a CSRF header, never through a path of its own. The pages follow the
metadata log through server-sent events (:mod:`.events`). docs/console.md describes it.
"""

from __future__ import annotations

from chunkraft.console.install import install_console

__all__ = ["install_console"]
