"""Batch order, chosen by the server and reproducible from a seed."""

from __future__ import annotations

import numpy as np
import torch


class BatchSampler:
    """Splits ``num_samples`` row positions into mini-batches, epoch by epoch.

    With ``shuffle``, epoch ``e`` uses the permutation drawn from ``default_rng([seed, e])``, so
    any epoch's order can be reproduced (and resumed) without replaying earlier ones. The last
    batch of an epoch may be smaller (``ceil(N / B)`` batches), or, with ``drop_last``, left out
    (``floor(N / B)`` batches, as torch's ``DataLoader(drop_last=True)``): with Q local steps a
    small last batch is over-fitted Q times.

    Args:
        num_samples: Rows in the training split.
        batch_size: Rows per batch.
        shuffle: Permute every epoch; else keep the source order.
        seed: Seed of the permutations.
        drop_last: Leave out an epoch's incomplete last batch.
    """

    def __init__(
        self,
        num_samples: int,
        batch_size: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ):
        if num_samples < 1 or batch_size < 1:
            raise ValueError(
                f"need num_samples >= 1 and batch_size >= 1, got {num_samples}, {batch_size}"
            )
        if drop_last and num_samples < batch_size:
            raise ValueError(
                f"drop_last with {num_samples} samples and batch size {batch_size} leaves no batch"
            )
        self.num_samples = num_samples
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last

    def __len__(self) -> int:
        """Batches per epoch."""
        if self.drop_last:
            return self.num_samples // self.batch_size
        return -(-self.num_samples // self.batch_size)

    def epoch(self, epoch: int, start: int = 0) -> list[torch.Tensor]:
        """The ``int64`` id batches of ``epoch`` (0-based), in order, from batch ``start`` on.

        ``start`` continues an epoch that a checkpoint cut after ``start`` rounds.
        """
        if not 0 <= start < len(self):
            raise ValueError(f"an epoch has {len(self)} batches; cannot start at batch {start}")
        if self.shuffle:
            order = np.random.default_rng([self.seed, epoch]).permutation(self.num_samples)
        else:
            order = np.arange(self.num_samples)
        ids = torch.from_numpy(order.astype(np.int64))
        return list(torch.split(ids, self.batch_size))[start : len(self)]


def chunks(num_samples: int, size: int) -> list[torch.Tensor]:
    """Consecutive ``int64`` id chunks of at most ``size`` covering ``0..num_samples-1``."""
    return list(torch.split(torch.arange(num_samples, dtype=torch.int64), size))
