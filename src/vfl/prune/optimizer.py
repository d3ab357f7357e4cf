"""Carry an optimizer's per-parameter state across a structured pruning pass.

Adam's moments, SGD's momentum buffers and any other state tensor shaped like its parameter are
sliced with the same indices as the parameter (``PrunedModel.slices``), so training continues
from the same moments for the kept units. State that is not shaped like its parameter (Adam's
``step`` counter) is copied unchanged, as are the hyper-parameters of every parameter group.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vfl.errors import ConfigError
from vfl.prune.structured import ParamSlice, PrunedModel


def slice_optimizer_state(
    optimizer: torch.optim.Optimizer, old_model: nn.Module, pruned: PrunedModel
) -> dict[str, Any]:
    """``optimizer.state_dict()`` with each parameter-shaped state tensor sliced like its parameter.

    Args:
        optimizer: The optimizer over ``old_model``'s parameters (or some of them).
        old_model: The model ``pruned`` was made from.
        pruned: The pruning pass.

    Returns:
        A state dict to load into an optimizer of the same class whose parameter groups hold the
        new model's parameters in the same order (``rebuild_optimizer`` builds one).
    """
    names = _group_names(optimizer, old_model)
    shapes = {name: param.shape for name, param in old_model.named_parameters()}
    state = optimizer.state_dict()
    sliced: dict[int, dict[str, Any]] = {}
    for index, entry in state["state"].items():
        name = names[index]
        kept = pruned.slices.get(name, ())
        sliced[index] = {key: _slice(value, shapes[name], kept) for key, value in entry.items()}
    return {"state": sliced, "param_groups": state["param_groups"]}


def rebuild_optimizer(
    optimizer: torch.optim.Optimizer, old_model: nn.Module, pruned: PrunedModel
) -> torch.optim.Optimizer:
    """An optimizer of ``optimizer``'s class over ``pruned.model`` that continues its state.

    Same parameter groups (in the same order, with their hyper-parameters), same defaults, and
    the state of each kept unit (``slice_optimizer_state``).

    Raises:
        ConfigError: if the optimizer holds a parameter that is not ``old_model``'s, or its class
            cannot be rebuilt from its ``defaults``.
    """
    names = _group_names(optimizer, old_model)
    new_params = dict(pruned.model.named_parameters())
    groups: list[dict[str, Any]] = []
    position = 0
    for group in optimizer.param_groups:
        count = len(group["params"])
        params = [new_params[names[i]] for i in range(position, position + count)]
        groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": params})
        position += count
    try:
        rebuilt = type(optimizer)(groups, **optimizer.defaults)
    except TypeError as error:
        raise ConfigError(
            f"cannot rebuild {type(optimizer).__name__} from its defaults: {error}"
        ) from None
    rebuilt.load_state_dict(slice_optimizer_state(optimizer, old_model, pruned))
    return rebuilt


def _group_names(optimizer: torch.optim.Optimizer, model: nn.Module) -> list[str]:
    """The model's name of each optimizer parameter, in ``state_dict`` index order."""
    by_id = {id(param): name for name, param in model.named_parameters()}
    names: list[str] = []
    for group in optimizer.param_groups:
        for param in group["params"]:
            if id(param) not in by_id:
                raise ConfigError(
                    f"the optimizer holds a parameter of shape {tuple(param.shape)} that is not"
                    " in the pruned model's original"
                )
            names.append(by_id[id(param)])
    return names


def _slice(value: Any, shape: torch.Size, kept: ParamSlice) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    if value.shape != shape or not kept:
        return value.clone()
    for dim, indices in kept:
        value = value.index_select(dim, indices.to(value.device))
    return value
