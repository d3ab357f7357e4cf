"""Build bottom and head models from config."""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import nn

from vfl.config import BottomConfig, HeadConfig
from vfl.errors import ConfigError
from vfl.models.bottom import MLP, SmallCNN
from vfl.models.head import ConcatHead, SumHead
from vfl.results.metrics import Task


def build_bottom(config: BottomConfig, block_shape: Sequence[int]) -> nn.Module:
    """A bottom model for a party whose samples have shape ``block_shape``."""
    output_activation = None if config.output_activation == "none" else config.output_activation
    if config.kind == "cnn":
        if len(block_shape) != 3:
            raise ConfigError(
                f"model.bottom.kind 'cnn' needs image blocks (C, H, W), got samples"
                f" of shape {tuple(block_shape)}; use 'mlp' for tables"
            )
        channels, height, width = block_shape
        return SmallCNN(
            channels,
            height,
            width,
            config.embedding_dim,
            channels=config.channels,
            hidden=config.hidden,
            activation_name=config.activation,
            output_activation=output_activation,
        )
    return MLP(
        math.prod(block_shape),
        config.hidden,
        config.embedding_dim,
        activation_name=config.activation,
        output_activation=output_activation,
    )


def build_head(config: HeadConfig, embedding_dims: Sequence[int], task: Task) -> nn.Module:
    """A head fusing embeddings of ``embedding_dims`` widths into ``task.output_dim`` logits."""
    if config.fusion == "sum":
        if len(set(embedding_dims)) != 1:
            raise ConfigError(
                f"model.head.fusion 'sum' needs equal embedding widths, got {list(embedding_dims)}"
            )
        width = embedding_dims[0]
        return SumHead(
            MLP(width, config.hidden, task.output_dim, activation_name=config.activation)
        )
    body = MLP(
        sum(embedding_dims), config.hidden, task.output_dim, activation_name=config.activation
    )
    return ConcatHead(body)
