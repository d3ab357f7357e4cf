"""The PBM's randomness by configuration: which count sampler, seeded or from the OS.

A deployment takes every key from the operating system (``secure_rng``); a simulation may
derive it from the run's seed, to be repeated draw for draw.
"""

from __future__ import annotations

import os

import torch

from vfl.privacy.binomial import ChaChaBinomial, CountSampler, TorchBinomial


def mechanism_generator(seed: int, *, secure_rng: bool) -> torch.Generator:
    """A torch generator: seeded (reproducible) or from 64 bits of the operating system."""
    generator = torch.Generator()
    generator.manual_seed(int.from_bytes(os.urandom(8), "little") if secure_rng else seed)
    return generator


SAMPLERS = ("chacha", "torch")


def count_sampler(kind: str, seed: int, *, secure_rng: bool) -> CountSampler:
    """The PBM's count sampler ``kind`` (``SAMPLERS``), seeded or from the operating system.

    ``chacha`` takes a 256-bit ChaCha20 key (from the OS, or derived from ``seed``); ``torch``
    a Mersenne Twister seeded with 64 bits (from the OS, or ``seed``).

    Raises:
        ValueError: for a ``kind`` outside ``SAMPLERS``.
    """
    if kind == "chacha":
        return ChaChaBinomial.from_os() if secure_rng else ChaChaBinomial.from_seed(seed)
    if kind == "torch":
        return TorchBinomial(mechanism_generator(seed, secure_rng=secure_rng))
    raise ValueError(f"unknown PBM sampler {kind!r}; valid: {', '.join(SAMPLERS)}")
