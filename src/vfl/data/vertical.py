"""Row-aligned per-party feature blocks and the label holder's labels: what a run trains on."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vfl.data.dataset import Dataset, check_finite
from vfl.data.partition import Partition
from vfl.errors import DataError
from vfl.results.metrics import Task


@dataclass(frozen=True)
class VerticalData:
    """Row-aligned feature blocks (one per party, in party order) and the server's labels."""

    train_blocks: tuple[torch.Tensor, ...]
    test_blocks: tuple[torch.Tensor, ...]
    train_labels: torch.Tensor
    test_labels: torch.Tensor
    task: Task

    def __post_init__(self) -> None:
        if not self.train_blocks or len(self.train_blocks) != len(self.test_blocks):
            raise DataError(
                f"need one train and one test block per party, got"
                f" {len(self.train_blocks)} and {len(self.test_blocks)}"
            )
        for split, blocks, labels in (
            ("train", self.train_blocks, self.train_labels),
            ("test", self.test_blocks, self.test_labels),
        ):
            for party, block in enumerate(blocks, start=1):
                if len(block) != len(labels):
                    raise DataError(
                        f"party {party}'s {split} block has {len(block)} rows but there are"
                        f" {len(labels)} {split} labels; every party must hold the same samples"
                        " in the same order (align them by ID first)"
                    )
                check_finite(block.numpy(), what=f"party {party}'s {split} features")

    @property
    def num_parties(self) -> int:
        """Number of parties."""
        return len(self.train_blocks)


def vertical_data(dataset: Dataset, partition: Partition) -> VerticalData:
    """Split ``dataset`` into per-party blocks with ``partition``."""
    return VerticalData(
        train_blocks=tuple(torch.from_numpy(b) for b in partition.blocks(dataset.train.features)),
        test_blocks=tuple(torch.from_numpy(b) for b in partition.blocks(dataset.test.features)),
        train_labels=torch.from_numpy(dataset.train.labels),
        test_labels=torch.from_numpy(dataset.test.labels),
        task=Task(dataset.num_classes),
    )
