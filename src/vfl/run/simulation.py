"""Wire a whole VFL run into one process: parties, server and the in-process transport.

This is the Python entry point for users with their own torch modules::

    data = vfl.vertical_data(dataset, partition)
    sim = vfl.simulate(data, bottoms=[...], head=vfl.models.ConcatHead(nn.Linear(256, 10)),
                       optimizer=lambda params: torch.optim.Adam(params, lr=1e-3))
    vfl.fit(sim, epochs=5)
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from vfl.config import RunConfig
from vfl.data.dataset import Dataset, check_finite
from vfl.data.partition import Partition
from vfl.errors import ConfigError, DataError
from vfl.models.head import CombinedModel
from vfl.models.optim import OptimizerFactory
from vfl.protocol.base import Trainer
from vfl.protocol.centralized import CentralizedTraining
from vfl.protocol.sampler import BatchSampler
from vfl.prune.lightweight import RoundCompute
from vfl.results.metrics import Task
from vfl.roles.party import Party
from vfl.roles.server import Server
from vfl.run.assemble import party_options, protocol_loop
from vfl.transport.base import PartyEndpoint
from vfl.transport.inproc import InProcTransport


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


class Simulation:
    """A trainer plus, for VFL, the in-process parties it talks to.

    Attributes:
        trainer: The protocol loop (``SplitLearning`` or ``CentralizedTraining``).
        parties: The parties (empty for the centralized baseline).
    """

    def __init__(self, trainer: Trainer, parties: Sequence[Party] = ()) -> None:
        self.trainer = trainer
        self.parties = list(parties)

    def compute_logs(self) -> dict[int, list[RoundCompute]]:
        """Each party's per-round compute records (parties that keep none are left out)."""
        return {
            p.party_id: p.options.lightweight.log
            for p in self.parties
            if p.options.lightweight is not None
        }

    def bottom_flops(self) -> int | None:
        """Training FLOPs of every bottom model so far, or ``None`` where unknown."""
        meters = [p.options.lightweight for p in self.parties]
        if not meters or None in meters:
            return None
        flops = [m.total_train_flops() for m in meters if m is not None]
        return None if min(flops) < 0 else sum(flops)

    def state_dict(self) -> dict[str, Any]:
        """Trainer state plus every party's state."""
        return {
            "trainer": self.trainer.state_dict(),
            "parties": {p.party_id: p.state_dict() for p in self.parties},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        self.trainer.load_state_dict(state["trainer"])
        for party in self.parties:
            party.load_state_dict(state["parties"][party.party_id])


def embedding_width(model: nn.Module, block: torch.Tensor) -> int:
    """The embedding width ``model`` produces, probed on one sample in eval mode."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model(block[:1])
    model.train(was_training)
    if out.ndim != 2 or out.shape[0] != 1:
        raise ConfigError(
            f"a bottom model must return (batch, width) embeddings; it returned"
            f" shape {tuple(out.shape)} for one sample"
        )
    return int(out.shape[1])


def simulate(
    data: VerticalData,
    *,
    bottoms: Sequence[nn.Module],
    head: nn.Module,
    optimizer: OptimizerFactory,
    batch_size: int = 128,
    eval_batch_size: int = 2048,
    shuffle: bool = True,
    drop_last: bool = False,
    seed: int = 0,
    centralized: bool = False,
    protocol: RunConfig | None = None,
) -> Simulation:
    """Build a one-process run: VFL through the in-process transport, or the centralized baseline.

    The modules are used as given (not copied); pass copies to compare runs from one init.

    Args:
        data: Per-party blocks and labels.
        bottoms: One bottom model per party, in party order.
        head: The server's head, taking the list of embeddings.
        optimizer: Builds each role's optimizer from its parameters.
        batch_size: Samples per round.
        eval_batch_size: Samples per evaluation request.
        shuffle: Shuffle every epoch (seeded).
        drop_last: Leave out each epoch's incomplete last batch.
        seed: Seed of the batch order.
        centralized: Train ``CombinedModel(bottoms, head)`` in one process, with no messages.
        protocol: Protocol options from a run config: its ``[protocol]`` (labels, local steps,
            schedule, proximal term), ``[compress]``, ``[privacy]`` tables and
            ``train.optimizer.lr_schedule``, seeded by ``train.seed``. The default is split
            learning (labels private, one step per exchange, no compression).
    """
    if len(bottoms) != data.num_parties:
        raise ConfigError(f"got {len(bottoms)} bottom models for {data.num_parties} parties")
    sampler = BatchSampler(
        len(data.train_labels), batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last
    )
    if centralized:
        model = CombinedModel(bottoms, head)
        trainer = CentralizedTraining(
            model=model,
            optimizer=optimizer(model.parameters()),
            task=data.task,
            train_blocks=data.train_blocks,
            test_blocks=data.test_blocks,
            train_labels=data.train_labels,
            test_labels=data.test_labels,
            sampler=sampler,
            eval_batch_size=eval_batch_size,
        )
        return Simulation(trainer)
    config = protocol or RunConfig()
    widths = {
        i: embedding_width(b, x)
        for i, (b, x) in enumerate(zip(bottoms, data.train_blocks, strict=True), start=1)
    }
    parties = [
        Party(
            i,
            train_features=train,
            test_features=test,
            model=bottom,
            optimizer=optimizer(bottom.parameters()),
            options=party_options(
                config,
                i,
                train_labels=data.train_labels,
                task=data.task,
                widths=widths,
                head=copy.deepcopy(head),
            ),
        )
        for i, (train, test, bottom) in enumerate(
            zip(data.train_blocks, data.test_blocks, bottoms, strict=True), start=1
        )
    ]
    server = Server(
        head=head,
        task=data.task,
        train_labels=data.train_labels,
        test_labels=data.test_labels,
        optimizer=optimizer(head.parameters()),
        embedding_dims=widths,
    )
    transport = InProcTransport({p.party_id: PartyEndpoint(p.party_id, p.handle) for p in parties})
    loop = protocol_loop(config, server, transport, sampler, eval_batch_size=eval_batch_size)
    return Simulation(loop, parties)


def clone_modules(
    bottoms: Sequence[nn.Module], head: nn.Module
) -> tuple[list[nn.Module], nn.Module]:
    """Deep copies of the models, to train two protocols from the same initial weights."""
    return [copy.deepcopy(b) for b in bottoms], copy.deepcopy(head)
