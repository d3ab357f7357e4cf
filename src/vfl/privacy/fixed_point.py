"""Bounded embeddings as non-negative integers, for exact secure sums of evaluation embeddings.

With secure aggregation on, a party hides its evaluation embedding (which needs no noise) in a
masked sum like its training counts: each coordinate in ``[-C, C]`` becomes an integer in
``0..2^f``, the server unmasks the sum of the parties' integers and turns it back into the sum
of their embeddings (to ``C 2^(1-f)`` a coordinate).
"""

from __future__ import annotations

import numpy as np
import torch


def to_fixed_point(x: torch.Tensor, *, clip: float, fraction_bits: int) -> np.ndarray:
    """``round((x / C + 1) 2^(f-1))`` in ``0..2^f``: bounded values as non-negative integers."""
    values = x.detach().to(device="cpu", dtype=torch.float64).clamp(-clip, clip)
    scaled = (values / clip + 1.0) * 2.0 ** (fraction_bits - 1)
    return scaled.round().to(torch.int64).numpy()


def from_fixed_point_sum(
    total: np.ndarray, *, parties: int, clip: float, fraction_bits: int
) -> torch.Tensor:
    """The sum of ``parties`` embeddings from the sum of their fixed-point encodings."""
    values = total.astype(np.float64) / 2.0 ** (fraction_bits - 1) - parties
    return torch.from_numpy(values * clip).to(torch.float32)
