"""Progressive structured pruning: prune further only when the ratio exceeds its running maximum.

LVFL (Wang et al., "Computation and Communication Efficient Lightweighting Vertical
Federated Learning", section IV, "Feature Model Lightweighting"): with
``α_k^{t-} = max{α_k^1, …, α_k^{t-1}}``, a party prunes at the start of round ``t`` only if
``α_k^t > α_k^{t-}``, "to meet the required lightweighting ratio for the current round"; when
``α_k^t ≤ α_k^{t-}`` nothing changes. Removed units never come back.

Ratios are always relative to the ORIGINAL widths: a layer of ``n`` units holds
``max(1, ceil((1 - α_max)·n))`` units after any sequence of rounds, whatever the path to
``α_max`` (0.2 then 0.5 gives the widths 0.5 gives at once). Each further pass ranks the units
still present by the L1 norm of their current (trained) weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from vfl.errors import ConfigError
from vfl.prune.structured import (
    PrunedModel,
    prune_units,
    select_units,
    unit_widths,
)
from vfl.schedules import check_ratio


class ProgressivePruner:
    """One party's never-regrow pruning state.

    Args:
        original_widths: Output width of each prunable layer of the unpruned model, by layer
            name (``unit_widths(model)`` of the freshly built model).

    Example:
        >>> from vfl.models import MLP
        >>> pruner = ProgressivePruner.for_model(MLP(6, [10], 2))
        >>> pruner.widths()
        {'layers.1': 10}
    """

    def __init__(self, original_widths: Mapping[str, int]) -> None:
        for name, width in original_widths.items():
            if isinstance(width, bool) or not isinstance(width, int) or width < 1:
                raise ConfigError(
                    f"original width of {name!r} must be an integer >= 1, not {width!r}"
                )
        self.original_widths = dict(original_widths)
        self.max_ratio = 0.0
        self.kept = {name: list(range(width)) for name, width in self.original_widths.items()}

    @classmethod
    def for_model(cls, model: nn.Module) -> ProgressivePruner:
        """A pruner for an unpruned ``model``."""
        return cls(unit_widths(model))

    def widths(self) -> dict[str, int]:
        """The current width of each prunable layer."""
        return {name: len(kept) for name, kept in self.kept.items()}

    def step(self, model: nn.Module, ratio: float) -> PrunedModel | None:
        """Apply round ratio ``ratio`` to ``model``, the party's current (pruned) model.

        Returns:
            The smaller model, or ``None`` when nothing changes: ``ratio`` does not exceed the
            largest ratio so far, or it does but every layer already holds its target count.

        Raises:
            ConfigError: if ``ratio`` is not in ``[0, 1)``, or ``model``'s widths are not the
                ones this pruner left.
        """
        ratio = check_ratio(ratio, "pruning ratio")
        if ratio <= self.max_ratio:
            return None
        if unit_widths(model) != self.widths():
            raise ConfigError(
                f"the model's prunable widths {unit_widths(model)} are not the pruner's"
                f" {self.widths()}; pass the model the last step returned"
            )
        units = select_units(model, ratio, original_widths=self.original_widths)
        self.max_ratio = ratio
        if not units:
            return None
        for name, kept in units.items():
            self.kept[name] = [self.kept[name][i] for i in kept.tolist()]
        return prune_units(model, units)

    def restore(self, model: nn.Module) -> PrunedModel:
        """Shrink a freshly built, unpruned ``model`` to the widths this pruner recorded.

        For resuming from a checkpoint: rebuild the original model, ``restore`` it, then load
        the checkpointed weights (which have the pruned shapes) into the result's model.
        """
        if unit_widths(model) != self.original_widths:
            raise ConfigError(
                f"restore needs the unpruned model with widths {self.original_widths}, got"
                f" {unit_widths(model)}"
            )
        units = {
            name: torch.tensor(kept, dtype=torch.int64)
            for name, kept in self.kept.items()
            if len(kept) < self.original_widths[name]
        }
        return prune_units(model, units)

    def state_dict(self) -> dict[str, Any]:
        """Plain-typed state: ``original_widths``, ``max_ratio`` and ``kept`` (original indices)."""
        return {
            "original_widths": dict(self.original_widths),
            "max_ratio": self.max_ratio,
            "kept": {name: list(kept) for name, kept in self.kept.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the state ``state_dict`` returned (checked against this pruner's layers)."""
        missing = {"original_widths", "max_ratio", "kept"} - set(state)
        if missing:
            raise ConfigError(f"pruner state lacks {sorted(missing)}")
        if dict(state["original_widths"]) != self.original_widths:
            raise ConfigError(
                f"pruner state is for layers {state['original_widths']}, this pruner has"
                f" {self.original_widths}"
            )
        max_ratio = check_ratio(state["max_ratio"], "max_ratio")
        kept = {name: [int(i) for i in indices] for name, indices in state["kept"].items()}
        if set(kept) != set(self.original_widths):
            raise ConfigError(f"pruner state keeps units of {sorted(kept)}, expected all layers")
        for name, indices in kept.items():
            _check_kept(name, indices, self.original_widths[name])
        self.max_ratio, self.kept = max_ratio, kept


def _check_kept(name: str, indices: list[int], width: int) -> None:
    if not indices or indices != sorted(set(indices)) or not 0 <= indices[0] <= indices[-1] < width:
        raise ConfigError(
            f"kept units of {name!r} must be distinct ascending indices in 0..{width - 1},"
            f" got {indices}"
        )
