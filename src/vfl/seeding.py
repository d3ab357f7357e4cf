"""Deterministic seed derivation: one experiment seed, independent streams per purpose."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch


def derive_seed(seed: int, *labels: str | int) -> int:
    """A 63-bit seed for the stream named by ``labels`` under experiment ``seed``.

    Stable across processes and Python versions (no ``hash()``), so a party process and the
    simulator derive the same value.

    Example:
        >>> derive_seed(0, "bottom", 1) == derive_seed(0, "bottom", 1)
        True
    """
    words = [
        int.from_bytes(hashlib.blake2b(str(label).encode(), digest_size=8).digest(), "little")
        for label in labels
    ]
    state = np.random.SeedSequence(entropy=seed, spawn_key=words).generate_state(2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


@contextmanager
def torch_seed(seed: int) -> Iterator[None]:
    """Run a block under ``torch.manual_seed(seed)`` without disturbing the global RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
