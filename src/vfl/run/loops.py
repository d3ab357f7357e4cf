"""Protocol loops by name: the only way a run builds its server-side loop.

The composition root's half of the protocol registry: ``vfl.config.protocols`` holds the
registrations (light, read by config rules); this module resolves a registration's loop class.

A new protocol is one module with a ``ServerLoop`` subclass (its ``name`` set) and one
``register_protocol`` line (``vfl.config.protocols``) naming it. Every loop takes the same
arguments; protocol-specific stages travel in ``LoopOptions``.

Example:
    >>> available_protocols()
    ('private_sum', 'sequential', 'shared_labels', 'split')
"""

from __future__ import annotations

from vfl.config.protocols import PROTOCOLS
from vfl.errors import ConfigError
from vfl.protocol.loop import ServerLoop
from vfl.protocol.options import LoopOptions
from vfl.protocol.sampler import BatchSampler
from vfl.registry import resolve
from vfl.roles.server import Server
from vfl.transport.base import Transport


def available_protocols() -> tuple[str, ...]:
    """The registered names of protocols run by a ``ServerLoop``, sorted."""
    return tuple(sorted(n for n, e in PROTOCOLS.items() if e.runner == "server_loop"))


def loop_class(name: str) -> type[ServerLoop]:
    """The ``ServerLoop`` subclass that the protocol called ``name`` registered.

    Raises:
        ConfigError: for an unknown name (listing the valid ones), or a registration whose loop
            is not a ``ServerLoop`` subclass.
    """
    entry = PROTOCOLS[name]
    if entry.runner != "server_loop":
        raise ConfigError(f"protocol {name!r} grows trees; it has no ServerLoop")
    cls = resolve(entry.loop)
    if not (isinstance(cls, type) and issubclass(cls, ServerLoop)):
        raise ConfigError(f"protocol {name!r}: {entry.loop!r} is not a ServerLoop subclass")
    return cls


def make_loop(
    name: str,
    server: Server,
    transport: Transport,
    sampler: BatchSampler,
    *,
    eval_batch_size: int,
    options: LoopOptions,
) -> ServerLoop:
    """The loop called ``name`` over ``transport``.

    Raises:
        ConfigError: for an unknown name (the message lists the valid ones).
    """
    cls = loop_class(name)
    return cls(server, transport, sampler, eval_batch_size=eval_batch_size, options=options)
