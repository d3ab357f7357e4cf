"""The Python entry point for users with their own torch modules: a thin wrapper over composition.

::

    data = vfl.vertical_data(dataset, partition)
    sim = vfl.simulate(data, bottoms=[...], head=vfl.models.ConcatHead(nn.Linear(256, 10)),
                       optimizer=lambda params: torch.optim.Adam(params, lr=1e-3))
    vfl.fit(sim, epochs=5)
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence

from torch import nn

from vfl.config import PartitionConfig, ProtocolConfig, RunConfig, TrainConfig
from vfl.data.vertical import VerticalData
from vfl.errors import ConfigError
from vfl.models.optim import OptimizerFactory
from vfl.run.compose import Blueprint, build_session
from vfl.run.models import GivenModels
from vfl.run.session import LocalParties, Session


def simulate(
    data: VerticalData,
    *,
    bottoms: Sequence[nn.Module],
    head: nn.Module,
    optimizer: OptimizerFactory,
    config: RunConfig | None = None,
    batch_size: int | None = None,
    eval_batch_size: int | None = None,
    shuffle: bool | None = None,
    drop_last: bool | None = None,
    seed: int | None = None,
    centralized: bool = False,
) -> Session[LocalParties]:
    """Build a one-process run of your own modules, exactly as ``vfl run`` builds a config's.

    The modules are used as given (not copied); pass copies to compare runs from one init.
    Everything else comes from ``config`` (its ``[protocol]``, ``[compress]``, ``[privacy]``,
    ``[lightweight]`` and ``[train]`` tables; the default is split learning), and the keyword
    arguments below override its ``[train]`` values.

    Args:
        data: Per-party blocks and labels.
        bottoms: One bottom model per party, in party order.
        head: The server's head, taking the list of embeddings.
        optimizer: Builds each role's optimizer from its parameters.
        config: Protocol and training settings; ``[data]``, ``[partition]`` and ``[model]`` are
            not used (the data and modules are given).
        batch_size: Samples per round (``train.batch_size``).
        eval_batch_size: Samples per evaluation request (``train.eval_batch_size``).
        shuffle: Shuffle every epoch (``train.shuffle``).
        drop_last: Leave out each epoch's incomplete last batch (``train.drop_last``).
        seed: The run seed (``train.seed``): batch order, message seeds, seeded noise.
        centralized: Train ``CombinedModel(bottoms, head)`` in one process with no messages
            (``protocol.mode = "centralized"``).

    Raises:
        ConfigError: if the number of bottoms is not the number of parties, or a setting is
            invalid (named).
    """
    if len(bottoms) != data.num_parties:
        raise ConfigError(f"got {len(bottoms)} bottom models for {data.num_parties} parties")
    resolved = _resolved(
        config or RunConfig(),
        data.num_parties,
        batch_size=batch_size,
        eval_batch_size=eval_batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        seed=seed,
        centralized=centralized,
    )
    models = GivenModels(tuple(bottoms), head, optimizer)
    return build_session(Blueprint(resolved, models), data)


def _resolved(
    config: RunConfig,
    num_parties: int,
    *,
    centralized: bool,
    **train: int | bool | None,
) -> RunConfig:
    """``config`` for ``num_parties`` parties, with the ``[train]`` overrides given."""
    overrides = {key: value for key, value in train.items() if value is not None}
    train_config: TrainConfig = dataclasses.replace(config.train, **overrides)  # type: ignore[arg-type]
    protocol: ProtocolConfig = config.protocol
    if centralized:
        protocol = dataclasses.replace(protocol, mode="centralized")
    partition = PartitionConfig(scheme="contiguous", num_parties=num_parties)
    return dataclasses.replace(config, train=train_config, protocol=protocol, partition=partition)


def clone_modules(
    bottoms: Sequence[nn.Module], head: nn.Module
) -> tuple[list[nn.Module], nn.Module]:
    """Deep copies of the models, to train two protocols from the same initial weights."""
    return [copy.deepcopy(b) for b in bottoms], copy.deepcopy(head)
