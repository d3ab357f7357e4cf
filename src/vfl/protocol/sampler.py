"""Batch order, chosen by the server and reproducible from a seed."""

from __future__ import annotations

import numpy as np
import torch


class BatchSampler:
    """Splits ``num_samples`` row positions into mini-batches, epoch by epoch.

    With ``shuffle``, epoch ``e`` uses the permutation drawn from ``default_rng([seed, e])``, so
    any epoch's order can be reproduced (and resumed) without replaying earlier ones. The last
    batch of an epoch may be smaller. An epoch has ``ceil(N / B)`` batches.

    Args:
        num_samples: Rows in the training split.
        batch_size: Rows per batch.
        shuffle: Permute every epoch; else keep the source order.
        seed: Seed of the permutations.
    """

    def __init__(self, num_samples: int, batch_size: int, *, shuffle: bool = True, seed: int = 0):
        if num_samples < 1 or batch_size < 1:
            raise ValueError(
                f"need num_samples >= 1 and batch_size >= 1, got {num_samples}, {batch_size}"
            )
        self.num_samples = num_samples
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed

    def __len__(self) -> int:
        """Batches per epoch."""
        return -(-self.num_samples // self.batch_size)

    def epoch(self, epoch: int) -> list[torch.Tensor]:
        """The ``int64`` id batches of ``epoch`` (0-based), in order."""
        if self.shuffle:
            order = np.random.default_rng([self.seed, epoch]).permutation(self.num_samples)
        else:
            order = np.arange(self.num_samples)
        ids = torch.from_numpy(order.astype(np.int64))
        return list(torch.split(ids, self.batch_size))


def chunks(num_samples: int, size: int) -> list[torch.Tensor]:
    """Consecutive ``int64`` id chunks of at most ``size`` covering ``0..num_samples-1``."""
    return list(torch.split(torch.arange(num_samples, dtype=torch.int64), size))
