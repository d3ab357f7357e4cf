"""Party (bottom) models: map a party's feature block to its embedding."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import nn

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "gelu": nn.GELU,
}


def activation(name: str) -> nn.Module:
    """A fresh activation module by name (``relu``, ``tanh``, ``sigmoid``, ``gelu``)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; valid: {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]()


class MLP(nn.Module):
    """A fully connected network; inputs of any shape are flattened after the batch dimension.

    Args:
        in_features: Input width after flattening.
        hidden: Widths of the hidden layers (may be empty for a linear map).
        out_features: Output (embedding) width.
        activation_name: Activation between layers.
        output_activation: Optional activation on the output, e.g. ``"tanh"`` for bounded
            embeddings; ``None`` leaves the output linear.
    """

    def __init__(
        self,
        in_features: int,
        hidden: Sequence[int],
        out_features: int,
        *,
        activation_name: str = "relu",
        output_activation: str | None = None,
    ) -> None:
        super().__init__()
        widths = [in_features, *hidden, out_features]
        layers: list[nn.Module] = [nn.Flatten()]
        for i, (width_in, width_out) in enumerate(itertools.pairwise(widths)):
            layers.append(nn.Linear(width_in, width_out))
            if i < len(widths) - 2:
                layers.append(activation(activation_name))
        if output_activation is not None:
            layers.append(activation(output_activation))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, ...) -> (B, out_features)
        """Embed a batch."""
        out: torch.Tensor = self.layers(x)
        return out


class SmallCNN(nn.Module):
    """Two 3x3 convolutions with max pooling, then a linear map to the embedding.

    conv(c1) - act - maxpool2 - conv(c2) - act - maxpool2 - flatten - [linear(hidden) - act] -
    linear(out). Works on any image block at least 4x4 pixels.

    Args:
        in_channels: Channels of the input block.
        height: Height of the input block in pixels.
        width: Width of the input block in pixels.
        out_features: Embedding width.
        channels: Output channels of the two convolutions.
        hidden: Widths of fully connected layers between the convolutions and the output.
        activation_name: Activation after each convolution and hidden layer.
        output_activation: Optional activation on the embedding.
    """

    def __init__(
        self,
        in_channels: int,
        height: int,
        width: int,
        out_features: int,
        *,
        channels: Sequence[int] = (16, 32),
        hidden: Sequence[int] = (),
        activation_name: str = "relu",
        output_activation: str | None = None,
    ) -> None:
        super().__init__()
        if len(channels) != 2:
            raise ValueError(f"SmallCNN takes exactly 2 conv widths, got {list(channels)}")
        if min(height, width) < 4:
            raise ValueError(f"SmallCNN needs blocks of at least 4x4 pixels, got {height}x{width}")
        c1, c2 = channels
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, c1, kernel_size=3, padding=1),
            activation(activation_name),
            nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, kernel_size=3, padding=1),
            activation(activation_name),
            nn.MaxPool2d(2),
            nn.Flatten(),
        )
        flat = c2 * (height // 2 // 2) * (width // 2 // 2)
        self.head = MLP(
            flat,
            hidden,
            out_features,
            activation_name=activation_name,
            output_activation=output_activation,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, H, W) -> (B, out_features)
        """Embed a batch of image blocks."""
        out: torch.Tensor = self.head(self.features(x))
        return out
