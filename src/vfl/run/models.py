"""Where a run's models and optimizers come from: the config, or the user's own torch objects.

The composition root asks a ``ModelSource`` for each role's model and optimizer, so a run built
from a config and a run built from the Python API's modules go through the same code.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from vfl.config import RunConfig
from vfl.errors import ConfigError
from vfl.models.build import build_bottom, build_head
from vfl.models.device import model_device, resolve_device
from vfl.models.optim import OptimizerFactory, optimizer_factory
from vfl.results.metrics import Task
from vfl.seeding import derive_seed, torch_seed


class ModelSource(Protocol):
    """Builds (or hands out) the models of one run and their optimizers."""

    def bottom(self, party: int, block: torch.Tensor) -> nn.Module:
        """Party ``party``'s bottom model for its feature block ``block`` (N, ...)."""
        ...

    def head(self, widths: Sequence[int], task: Task) -> nn.Module:
        """The server's head over embeddings of ``widths`` (ascending party id)."""
        ...

    def head_replica(self, widths: Sequence[int], task: Task) -> nn.Module:
        """A party's copy of the head's architecture (shared labels refresh it every round)."""
        ...

    def optimizer(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer | None:
        """An optimizer over one role's parameters (``None`` when it has none to train)."""
        ...


@dataclass(frozen=True)
class ConfigModels:
    """The models ``[model]`` describes, initialised from ``train.seed`` (same in any process)."""

    config: RunConfig

    def bottom(self, party: int, block: torch.Tensor) -> nn.Module:
        """An MLP or small CNN seeded by ``(train.seed, "bottom", party)``."""
        spec = self.config.model.bottom
        with torch_seed(derive_seed(self.config.train.seed, "bottom", party)):
            model = build_bottom(
                spec.kind,
                tuple(block.shape[1:]),
                embedding_dim=spec.embedding_dim,
                hidden=spec.hidden,
                channels=spec.channels,
                activation=spec.activation,
                output_activation=spec.output_activation,
            )
        return model.to(self.device)

    def head(self, widths: Sequence[int], task: Task) -> nn.Module:
        """A concatenating or summing head seeded by ``(train.seed, "head")``."""
        spec = self.config.model.head
        with torch_seed(derive_seed(self.config.train.seed, "head")):
            head = build_head(
                spec.fusion,
                widths,
                task,
                hidden=spec.hidden,
                activation=spec.activation,
                top=spec.top,
            )
        return head.to(self.device)

    @property
    def device(self) -> torch.device:
        """The device ``train.device`` names (the models are built on the CPU, then moved)."""
        return resolve_device(self.config.train.device)

    def head_replica(self, widths: Sequence[int], task: Task) -> nn.Module:
        """The same head: built from the same seed, it starts equal to the server's."""
        return self.head(widths, task)

    def optimizer(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer | None:
        """The optimizer ``train.optimizer`` names (``None`` without parameters to train)."""
        params = list(params)
        if not params:
            return None
        spec = self.config.train.optimizer
        build = optimizer_factory(
            spec.name,
            lr=spec.lr,
            momentum=spec.momentum,
            weight_decay=spec.weight_decay,
            fused=spec.fused,
        )
        return build(params)

    def declared_widths(self, num_parties: int) -> dict[int, int]:
        """Every party's embedding width, known without seeing its block."""
        width = self.config.model.bottom.embedding_dim
        return dict.fromkeys(range(1, num_parties + 1), width)


@dataclass(frozen=True)
class GivenModels:
    """The user's own modules, used as given (not copied), and their optimizer factory.

    Attributes:
        bottoms: One bottom model per party, in party order.
        head_module: The server's head, taking the list of embeddings.
        factory: Builds each role's optimizer from its parameters.
    """

    bottoms: Sequence[nn.Module]
    head_module: nn.Module
    factory: OptimizerFactory

    def bottom(self, party: int, block: torch.Tensor) -> nn.Module:
        """The ``party``-th module given."""
        if not 1 <= party <= len(self.bottoms):
            raise ConfigError(f"got {len(self.bottoms)} bottom models; party {party} has none")
        return self.bottoms[party - 1]

    def head(self, widths: Sequence[int], task: Task) -> nn.Module:
        """The head given."""
        return self.head_module

    def head_replica(self, widths: Sequence[int], task: Task) -> nn.Module:
        """A deep copy of the head given."""
        return copy.deepcopy(self.head_module)

    def optimizer(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer | None:
        """The user's optimizer over ``params`` (``None`` without parameters to train)."""
        params = list(params)
        return self.factory(params) if params else None


def embedding_width(model: nn.Module, block: torch.Tensor) -> int:
    """The embedding width ``model`` produces, probed on one sample in eval mode.

    The sample crosses to the model's device first (``block`` stays on the host).
    """
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model(block[:1].to(model_device(model)))
    model.train(was_training)
    if out.ndim != 2 or out.shape[0] != 1:
        raise ConfigError(
            f"a bottom model must return (batch, width) embeddings; it returned"
            f" shape {tuple(out.shape)} for one sample"
        )
    return int(out.shape[1])
