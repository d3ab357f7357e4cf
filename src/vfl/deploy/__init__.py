"""Deployment: one process per party and one for the server, talking gRPC over TLS.

``vfl server`` and ``vfl party`` run the two roles on separate hosts, ``vfl launch`` starts them
all on one machine, ``vfl certs`` makes test certificates. Before training, the holders align
their rows by private set intersection (``psi``). See ``docs/deployment.md``.
"""
