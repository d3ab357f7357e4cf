"""FLOPs per sample and parameter counts of a bottom model, from its layers and an input shape.

Conventions (LVFL leaves "computation" unmeasured; docs/pruning.md):

- one multiply-add is **2 FLOPs**; a bias add is 1 FLOP per output value. A ``Linear`` with
  ``n_in`` inputs and ``n_out`` outputs costs ``2·n_in·n_out + n_out`` per position; a ``Conv2d``
  costs ``2·(C_in/groups)·k_h·k_w·C_out·H_out·W_out + C_out·H_out·W_out``.
- only the forward pass of one sample is counted; a training step costs about 3 times that
  (the backward pass computes two products per weight product).
- with ``elementwise=True``, activations add 1 FLOP per output value (a nominal figure, even for
  ``tanh`` or GELU), max pooling ``k_h·k_w - 1`` comparisons and average pooling ``k_h·k_w``
  operations per output value; dropout, ``Identity`` and ``Flatten`` cost nothing. The default
  leaves them out, as FLOPs tables of ConvNets usually do.
- output sizes follow PyTorch's formulas (``conv2d_output_size``, ``pool2d_output_size``), so
  stride, padding, dilation and ``ceil_mode`` count.

Worked example (``SmallCNN(1, 14, 14, 64)``, channels 16 and 32, input ``(1, 14, 14)``):
conv1 ``2·1·9·16·14·14 + 16·14·14 = 59,584``; conv2 on ``16×7×7``:
``2·16·9·32·7·7 + 32·7·7 = 453,152``; linear ``288 → 64``: ``2·288·64 + 64 = 36,928``;
549,664 FLOPs per sample in all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from torch import nn

from vfl.errors import ConfigError
from vfl.prune.chain import ELEMENTWISE_LAYERS, layer_chain

_FREE_LAYERS = (nn.Identity, nn.Dropout, nn.Dropout2d, nn.Flatten)


@dataclass(frozen=True)
class LayerCost:
    """One layer's cost for one sample.

    Attributes:
        name: The layer's path in the model.
        kind: Its class name.
        output_shape: Its output shape for one sample (no batch dimension).
        flops: Its forward FLOPs for one sample.
        params: Its parameter count.
    """

    name: str
    kind: str
    output_shape: tuple[int, ...]
    flops: int
    params: int


@dataclass(frozen=True)
class ModelCost:
    """A model's per-layer costs for one sample; ``flops`` and ``params`` are the totals."""

    layers: tuple[LayerCost, ...]

    @property
    def flops(self) -> int:
        """Forward FLOPs per sample."""
        return sum(layer.flops for layer in self.layers)

    @property
    def params(self) -> int:
        """Parameters of the counted layers."""
        return sum(layer.params for layer in self.layers)


def count_params(model: nn.Module, *, trainable_only: bool = False) -> int:
    """Number of parameter values (all, or only those with ``requires_grad``)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def conv2d_output_size(
    size: int, *, kernel: int, stride: int = 1, padding: int = 0, dilation: int = 1
) -> int:
    """``floor((size + 2·padding - dilation·(kernel - 1) - 1) / stride) + 1`` (PyTorch ``Conv2d``).

    Raises:
        ConfigError: if the (padded) input is smaller than the dilated kernel.
    """
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if span < 0:
        raise ConfigError(
            f"input size {size} (padding {padding}) is smaller than the kernel {kernel}"
            f" (dilation {dilation})"
        )
    return span // stride + 1


def pool2d_output_size(
    size: int,
    *,
    kernel: int,
    stride: int,
    padding: int = 0,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> int:
    """Pooled size: the convolution formula, rounded up with ``ceil_mode`` (PyTorch's rule).

    With ``ceil_mode`` a last window that would start in the right padding is dropped.
    """
    if not ceil_mode:
        return conv2d_output_size(
            size, kernel=kernel, stride=stride, padding=padding, dilation=dilation
        )
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if span < 0:
        raise ConfigError(f"input size {size} is smaller than the pooling window {kernel}")
    out = math.ceil(span / stride) + 1
    return out - 1 if (out - 1) * stride >= size + padding else out


def model_cost(
    model: nn.Module, input_shape: Sequence[int], *, elementwise: bool = False
) -> ModelCost:
    """Per-layer FLOPs and parameters of ``model`` for one sample of shape ``input_shape``.

    Args:
        model: A supported chain model (``vfl.prune.chain``).
        input_shape: One sample's shape, without the batch dimension, e.g. ``(1, 14, 14)``.
        elementwise: Also count activations and pooling (see the module docstring).

    Raises:
        ConfigError: if the shapes do not fit the layers or a layer is not supported.
    """
    shape = tuple(int(s) for s in input_shape)
    costs: list[LayerCost] = []
    for link in layer_chain(model):
        layer = link.module
        out_shape, flops = _layer_flops(link.name, layer, shape, elementwise)
        params = sum(p.numel() for p in layer.parameters())
        costs.append(LayerCost(link.name, type(layer).__name__, out_shape, flops, params))
        shape = out_shape
    return ModelCost(tuple(costs))


def flops_per_sample(
    model: nn.Module, input_shape: Sequence[int], *, elementwise: bool = False
) -> int:
    """Total forward FLOPs of ``model`` for one sample (``model_cost(...).flops``)."""
    return model_cost(model, input_shape, elementwise=elementwise).flops


def _layer_flops(
    name: str, layer: nn.Module, shape: tuple[int, ...], elementwise: bool
) -> tuple[tuple[int, ...], int]:
    """The layer's output shape for one sample and its FLOPs."""
    if isinstance(layer, nn.Linear):
        return _linear(name, layer, shape)
    if isinstance(layer, nn.Conv2d):
        return _conv(name, layer, shape)
    if isinstance(layer, nn.MaxPool2d | nn.AvgPool2d):
        return _pool(name, layer, shape, elementwise)
    if isinstance(layer, nn.Flatten):
        return _flatten(name, layer, shape), 0
    if isinstance(layer, _FREE_LAYERS):
        return shape, 0
    assert isinstance(layer, ELEMENTWISE_LAYERS), "layer_chain admits no other kinds"
    return shape, math.prod(shape) if elementwise else 0


def _linear(name: str, layer: nn.Linear, shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    if not shape or shape[-1] != layer.in_features:
        raise ConfigError(f"Linear {name!r} takes {layer.in_features} features, gets shape {shape}")
    positions = math.prod(shape[:-1])
    per_position = 2 * layer.in_features * layer.out_features
    if layer.bias is not None:
        per_position += layer.out_features
    return (*shape[:-1], layer.out_features), positions * per_position


def _conv(name: str, layer: nn.Conv2d, shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    if len(shape) != 3 or shape[0] != layer.in_channels:
        raise ConfigError(
            f"Conv2d {name!r} takes ({layer.in_channels}, H, W) per sample, gets shape {shape}"
        )
    out_hw = tuple(
        size
        if layer.padding == "same"
        else conv2d_output_size(
            size,
            kernel=layer.kernel_size[i],
            stride=layer.stride[i],
            padding=0 if layer.padding == "valid" else int(layer.padding[i]),
            dilation=layer.dilation[i],
        )
        for i, size in enumerate(shape[1:])
    )
    outputs = layer.out_channels * math.prod(out_hw)
    macs = outputs * (layer.in_channels // layer.groups) * math.prod(layer.kernel_size)
    bias = outputs if layer.bias is not None else 0
    return (layer.out_channels, *out_hw), 2 * macs + bias


def _pool(
    name: str, layer: nn.MaxPool2d | nn.AvgPool2d, shape: tuple[int, ...], elementwise: bool
) -> tuple[tuple[int, ...], int]:
    if len(shape) != 3:
        raise ConfigError(f"{type(layer).__name__} {name!r} takes (C, H, W), gets shape {shape}")
    kernel, stride, padding = (_pair(v) for v in (layer.kernel_size, layer.stride, layer.padding))
    dilation = _pair(layer.dilation) if isinstance(layer, nn.MaxPool2d) else (1, 1)
    out_hw = tuple(
        pool2d_output_size(
            shape[1 + i],
            kernel=kernel[i],
            stride=stride[i] or kernel[i],
            padding=padding[i],
            dilation=dilation[i],
            ceil_mode=layer.ceil_mode,
        )
        for i in range(2)
    )
    window = kernel[0] * kernel[1]
    per_output = window - 1 if isinstance(layer, nn.MaxPool2d) else window
    outputs = shape[0] * math.prod(out_hw)
    return (shape[0], *out_hw), outputs * per_output if elementwise else 0


def _flatten(name: str, layer: nn.Flatten, shape: tuple[int, ...]) -> tuple[int, ...]:
    full = (1, *shape)  # the batch dimension, so that start_dim/end_dim index as in forward
    start, end = layer.start_dim % len(full), layer.end_dim % len(full)
    if start == 0:
        raise ConfigError(f"Flatten {name!r} merges the batch dimension (start_dim=0)")
    return (*full[:start], math.prod(full[start : end + 1]), *full[end + 1 :])[1:]


def _pair(value: int | Sequence[int] | None) -> tuple[int, int]:
    if value is None:
        return (0, 0)
    if isinstance(value, int):
        return (value, value)
    return (int(value[0]), int(value[1]))
