"""Protocol loops by name: the only way a run builds its server-side loop.

A new protocol is one module with a ``ServerLoop`` subclass (its ``name`` set) plus one entry
here. Every loop takes the same arguments; protocol-specific stages travel in ``LoopOptions``.

Example:
    >>> available_protocols()
    ('private_sum', 'sequential', 'shared_labels', 'split')
"""

from __future__ import annotations

from types import MappingProxyType

from vfl.errors import ConfigError
from vfl.protocol.loop import LoopOptions, ServerLoop
from vfl.protocol.private_sum import PrivateSumTraining
from vfl.protocol.sampler import BatchSampler
from vfl.protocol.shared import SharedLabelsTraining
from vfl.protocol.split_learning import SequentialSplitLearning, SplitLearning
from vfl.roles.server import Server
from vfl.transport.base import Transport

PROTOCOLS: MappingProxyType[str, type[ServerLoop]] = MappingProxyType(
    {
        cls.name: cls
        for cls in (
            SplitLearning,
            SequentialSplitLearning,
            SharedLabelsTraining,
            PrivateSumTraining,
        )
    }
)
"""Every server-side loop class by its ``name``."""


def available_protocols() -> tuple[str, ...]:
    """The registered names, sorted."""
    return tuple(sorted(PROTOCOLS))


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
    cls = PROTOCOLS.get(name)
    if cls is None:
        raise ConfigError(f"unknown protocol {name!r}; valid: {', '.join(available_protocols())}")
    return cls(server, transport, sampler, eval_batch_size=eval_batch_size, options=options)
