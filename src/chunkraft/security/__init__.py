"""Who may do what: principals, the credentials file and the ACL authorizer.

Nothing here talks HTTP: :mod:`chunkraft.api` authenticates a request into a
:class:`~chunkraft.security.principal.Principal` and asks the
:class:`~chunkraft.security.authorizer.Authorizer`, which reads the ACLs of a metadata image.
"""
