"""Structured pruning of a bottom model: rank filters and neurons by L1 norm, rebuild the layers.

LVFL (Wang et al., "Computation and Communication Efficient Lightweighting Vertical
Federated Learning", section IV, "Feature Model Lightweighting")
prunes each party's feature model with one ratio ``α`` in every layer, ranking "filters or
neurons" by an L1 importance score, following Li et al., "Pruning filters for efficient
ConvNets" (ICLR 2017), section 3.1. Here:

- the score of a ``Conv2d`` filter ``j`` is ``s_j = Σ |W[j, :, :, :]|``, the L1 norm of its whole
  kernel over all input channels; the score of a ``Linear`` neuron ``j`` is
  ``s_j = Σ |W[j, :]|``, the L1 norm of its incoming weight row. Biases do not count.
- every ``Linear``/``Conv2d`` is prunable except the last one, whose outputs are the embedding
  the server sees (its width never changes). A layer of ``n`` original units keeps the
  ``max(1, ceil((1 - α)·n))`` highest-scoring ones (ties go to the lower index).
- all layers of one pass are ranked on the weights as they are before the pass (Li et al.'s
  "independent" strategy, section 3.4), then rebuilt together.
- the model is really rebuilt, never masked: a pruned layer gets new, smaller weight and bias
  tensors holding the kept rows, and the next weighted layer keeps only the matching input
  columns (input channels of a ``Conv2d``; for a ``Conv2d`` → ``Flatten`` → ``Linear`` the
  ``Linear`` keeps each kept channel's block of ``H·W`` columns, since ``Flatten`` is
  channel-major).

The result computes exactly what the original computes when the removed units' outputs are set to
zero (for activations with ``f(0) = 0``, such as ReLU, the same as zeroing their weights and
biases: LVFL's ``θ̂ = θ ⊙ m``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import nn

from vfl.errors import ConfigError
from vfl.prune.chain import WEIGHTED_LAYERS, layer_chain, prunable_links
from vfl.schedules import check_ratio

ParamSlice = tuple[tuple[int, torch.Tensor], ...]
"""Which indices of an old parameter a new one keeps: ``(dim, indices)`` pairs, applied in order."""


@dataclass(frozen=True)
class PrunedModel:
    """A rebuilt, smaller model and what it kept of the old one.

    Attributes:
        model: The new model (a deep copy of the old one with smaller layers).
        units: For each layer that lost units, the indices (into that layer's outputs before
            this pass, ascending int64) of the units it kept.
        slices: For each parameter that shrank, by its name in ``named_parameters()`` (the
            same in both models), the indices it kept per dimension; used to slice optimizer
            state the same way.
    """

    model: nn.Module
    units: Mapping[str, torch.Tensor]
    slices: Mapping[str, ParamSlice]


@dataclass(frozen=True)
class _Upstream:
    """The units the previous weighted layer kept, to slice the next layer's inputs."""

    kept: torch.Tensor
    width: int  # the layer's units before this pass: ``kept`` indexes into them
    is_conv: bool


def kept_count(original: int, ratio: float) -> int:
    """Units a layer of ``original`` units keeps at pruning ratio ``ratio``.

    ``max(1, ceil((1 - ratio)·original))``, rounded to 9 decimals before the ceiling so that a
    decimal ratio such as 0.7 keeps 3 of 10 units (binary floating point gives 3.0000000000000004).

    Example:
        >>> [kept_count(10, r) for r in (0.0, 0.25, 0.5, 0.7, 0.99)]
        [10, 8, 5, 3, 1]
    """
    check_ratio(ratio, "pruning ratio")
    if original < 1:
        raise ConfigError(f"a layer needs at least 1 unit, got {original}")
    return max(1, math.ceil(round((1.0 - ratio) * original, 9)))


def unit_scores(layer: nn.Module) -> torch.Tensor:
    """L1 norm of each output unit's weights: filter kernels (Conv2d) or weight rows (Linear).

    Li et al. (ICLR 2017) section 3.1: ``s_j = Σ_l Σ |K_{j,l}|`` over the filter's kernels.
    """
    if not isinstance(layer, WEIGHTED_LAYERS):
        raise ConfigError(f"only Linear and Conv2d units have scores, got {type(layer).__name__}")
    weight = layer.weight.detach()
    return weight.abs().flatten(1).sum(dim=1)  # (units,)


def top_units(layer: nn.Module, count: int) -> torch.Tensor:
    """Indices of the ``count`` highest-L1 units of ``layer``, ascending (ties: lower index)."""
    scores = unit_scores(layer)
    if not 1 <= count <= scores.numel():
        raise ConfigError(f"can keep 1..{scores.numel()} units of this layer, not {count}")
    order = torch.argsort(scores, descending=True, stable=True)[:count]
    return torch.sort(order).values


def unit_widths(model: nn.Module) -> dict[str, int]:
    """The current output width of every prunable layer, by name, in forward order."""
    return {link.name: _width(_weighted(link.module)) for link in prunable_links(model)}


def select_units(
    model: nn.Module, ratio: float, *, original_widths: Mapping[str, int] | None = None
) -> dict[str, torch.Tensor]:
    """The units each prunable layer keeps at ``ratio``: the highest-L1 ones.

    Args:
        model: The model to rank.
        ratio: Fraction of each layer's ORIGINAL units to remove, in ``[0, 1)``.
        original_widths: Each prunable layer's width before any pruning (default: its current
            width, i.e. the model has not been pruned yet).

    Returns:
        Kept indices per layer that loses units; a layer already at or below its target is
        left out (pruning never regrows).
    """
    current = unit_widths(model)
    originals = dict(current if original_widths is None else original_widths)
    if set(originals) != set(current):
        raise ConfigError(
            f"original widths name layers {sorted(originals)}, the model's prunable layers are"
            f" {sorted(current)}"
        )
    layers = dict(model.named_modules())
    units: dict[str, torch.Tensor] = {}
    for name, width in current.items():
        target = kept_count(originals[name], ratio)
        if target < width:
            units[name] = top_units(layers[name], target)
    return units


def prune_model(
    model: nn.Module, ratio: float, *, original_widths: Mapping[str, int] | None = None
) -> PrunedModel:
    """Rank with ``select_units`` and rebuild with ``prune_units``; ``model`` is not modified."""
    return prune_units(model, select_units(model, ratio, original_widths=original_widths))


def prune_units(model: nn.Module, units: Mapping[str, torch.Tensor]) -> PrunedModel:
    """A copy of ``model`` in which each named layer keeps only the given output units.

    Args:
        model: A supported chain model (``vfl.prune.chain``); it is not modified.
        units: Kept output indices (into the current layer) per prunable layer name; layers
            not named keep every unit.

    Raises:
        ConfigError: if a name is not a prunable layer (the embedding layer never is), or the
            indices are empty, repeated or out of range.
    """
    _check_units(model, units)
    pruned = copy.deepcopy(model)
    slices: dict[str, ParamSlice] = {}
    upstream: _Upstream | None = None
    flattened = False
    for link in layer_chain(pruned):
        layer = link.module
        if isinstance(layer, nn.Flatten):
            _check_flatten(link.name, layer, upstream)
            flattened = True
        if not isinstance(layer, WEIGHTED_LAYERS):
            continue
        inputs = _input_indices(link.name, layer, upstream, flattened)
        outputs = units.get(link.name)
        width, is_conv = _width(layer), isinstance(layer, nn.Conv2d)
        slices.update(_shrink(link.name, layer, outputs, inputs))
        upstream = None if outputs is None else _Upstream(outputs, width, is_conv)
        flattened = False
    return PrunedModel(pruned, {name: idx.clone() for name, idx in units.items()}, slices)


def _width(layer: nn.Linear | nn.Conv2d) -> int:
    return int(layer.weight.shape[0])


def _check_units(model: nn.Module, units: Mapping[str, torch.Tensor]) -> None:
    widths = unit_widths(model)
    for name, kept in units.items():
        if name not in widths:
            raise ConfigError(
                f"{name!r} is not a prunable layer; prunable: {list(widths)} (the last weighted"
                " layer produces the embedding and is never pruned)"
            )
        values = kept.tolist()
        if kept.dtype != torch.int64 or kept.dim() != 1 or not values:
            raise ConfigError(f"units of {name!r} must be a non-empty 1-D int64 tensor")
        if values != sorted(set(values)) or values[0] < 0 or values[-1] >= widths[name]:
            raise ConfigError(
                f"units of {name!r} must be distinct ascending indices in 0..{widths[name] - 1},"
                f" got {values}"
            )


def _check_flatten(name: str, layer: nn.Flatten, upstream: _Upstream | None) -> None:
    if upstream is not None and upstream.is_conv and (layer.start_dim, layer.end_dim) != (1, -1):
        raise ConfigError(
            f"Flatten {name!r} after a pruned convolution must flatten dims 1..-1, got"
            f" start_dim={layer.start_dim}, end_dim={layer.end_dim}"
        )


def _input_indices(
    name: str, layer: nn.Linear | nn.Conv2d, upstream: _Upstream | None, flattened: bool
) -> torch.Tensor | None:
    """The input columns (Linear) or channels (Conv2d) of ``layer`` that survive upstream."""
    if upstream is None:
        return None
    if isinstance(layer, nn.Conv2d):
        if not upstream.is_conv or flattened:
            raise ConfigError(f"Conv2d {name!r} must follow a Conv2d without Flatten to prune")
        return upstream.kept
    if not upstream.is_conv:
        return upstream.kept
    if not flattened:
        raise ConfigError(f"Linear {name!r} after a pruned Conv2d needs a Flatten between them")
    columns = int(layer.weight.shape[1])
    if columns % upstream.width:
        raise ConfigError(
            f"Linear {name!r} has {columns} inputs, not a multiple of the {upstream.width}"
            " channels before Flatten"
        )
    block = columns // upstream.width  # H·W columns per channel, channel-major
    offsets = torch.arange(block, dtype=torch.int64, device=upstream.kept.device)
    return (upstream.kept[:, None] * block + offsets[None, :]).reshape(-1)


def _shrink(
    name: str,
    layer: nn.Linear | nn.Conv2d,
    outputs: torch.Tensor | None,
    inputs: torch.Tensor | None,
) -> dict[str, ParamSlice]:
    """Replace ``layer``'s parameters by their kept rows/columns; return what each kept."""
    weight_slice: ParamSlice = tuple(
        (dim, idx) for dim, idx in ((0, outputs), (1, inputs)) if idx is not None
    )
    if not weight_slice:
        return {}
    slices = {f"{name}.weight": weight_slice}
    layer.weight = _sliced(layer.weight, weight_slice)
    if layer.bias is not None and outputs is not None:
        slices[f"{name}.bias"] = ((0, outputs),)
        layer.bias = _sliced(layer.bias, slices[f"{name}.bias"])
    _set_widths(layer)
    return slices


def _sliced(param: torch.Tensor, kept: ParamSlice) -> nn.Parameter:
    data = param.detach()
    for dim, idx in kept:
        data = data.index_select(dim, idx.to(data.device))
    return nn.Parameter(data.clone(), requires_grad=param.requires_grad)


def _set_widths(layer: nn.Linear | nn.Conv2d) -> None:
    out_units, in_units = layer.weight.shape[:2]
    if isinstance(layer, nn.Linear):
        layer.out_features, layer.in_features = int(out_units), int(in_units)
    else:
        layer.out_channels, layer.in_channels = int(out_units), int(in_units)


def _weighted(module: nn.Module) -> nn.Linear | nn.Conv2d:
    assert isinstance(module, WEIGHTED_LAYERS), "prunable_links yields only weighted layers"
    return module
