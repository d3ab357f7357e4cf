"""Seconds per phase of a tree, and the per-tree record a run keeps."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

PHASES = ("gradients", "encrypt", "histogram", "decrypt", "split_find", "split_apply")
"""The label holder's phases of a tree, in order; ``histogram`` is the time the passive holders
take to answer (in one process: their computation), ``split_apply`` includes their split replies."""


class PhaseTimer:
    """Wall-clock seconds accumulated per phase."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block under ``name``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - started


@dataclass
class TreeReport:
    """What growing one tree cost.

    Attributes:
        tree: Its index.
        seconds: Wall-clock seconds per phase (``PHASES``).
        bytes_down: Encoded frame bytes the label holder sent (all passive holders together),
            as the transport's ledger counted them.
        bytes_up: Encoded frame bytes it received.
        transport_seconds: Of the ``histogram`` and ``split_apply`` phases, the seconds spent
            encoding, moving and decoding frames (the rest is the holders' own work).
        ciphertexts_up: Histogram ciphertexts it received and decrypted.
        leaves: Leaves of the tree.
    """

    tree: int
    seconds: dict[str, float] = field(default_factory=dict)
    bytes_down: int = 0
    bytes_up: int = 0
    transport_seconds: float = 0.0
    ciphertexts_up: int = 0
    leaves: int = 0
