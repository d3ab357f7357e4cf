"""Build the bottom and head models a run names (the composition root passes the settings)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import nn

from vfl.errors import ConfigError
from vfl.models.bottom import MLP, SmallCNN
from vfl.models.head import ConcatHead, SumHead
from vfl.results.metrics import Task

BOTTOM_KINDS = ("mlp", "cnn")
FUSIONS = ("concat", "sum", "mean")
TOPS = ("mlp", "none")


def build_bottom(
    kind: str,
    block_shape: Sequence[int],
    *,
    embedding_dim: int,
    hidden: Sequence[int] = (128,),
    channels: Sequence[int] = (16, 32),
    activation: str = "relu",
    output_activation: str = "none",
) -> nn.Module:
    """A bottom model of ``kind`` (``mlp`` or ``cnn``) for samples of shape ``block_shape``."""
    last = None if output_activation == "none" else output_activation
    if kind == "cnn":
        if len(block_shape) != 3:
            raise ConfigError(
                f"model.bottom.kind 'cnn' needs image blocks (C, H, W), got samples"
                f" of shape {tuple(block_shape)}; use 'mlp' for tables"
            )
        in_channels, height, width = block_shape
        return SmallCNN(
            in_channels,
            height,
            width,
            embedding_dim,
            channels=tuple(channels),
            hidden=tuple(hidden),
            activation_name=activation,
            output_activation=last,
        )
    if kind != "mlp":
        raise ConfigError(f"model.bottom.kind: unknown {kind!r}; valid: {', '.join(BOTTOM_KINDS)}")
    return MLP(
        math.prod(block_shape),
        tuple(hidden),
        embedding_dim,
        activation_name=activation,
        output_activation=last,
    )


def build_head(
    fusion: str,
    embedding_dims: Sequence[int],
    task: Task,
    *,
    hidden: Sequence[int] = (),
    activation: str = "relu",
    top: str = "mlp",
) -> nn.Module:
    """A head fusing embeddings of ``embedding_dims`` widths into ``task.output_dim`` logits.

    ``top = "none"`` fuses by sum or mean with no trainable model after it: every party's
    output must then already be ``task.output_dim`` logits.
    """
    if fusion in ("sum", "mean"):
        if len(set(embedding_dims)) != 1:
            raise ConfigError(
                f"model.head.fusion {fusion!r} needs equal embedding widths, got"
                f" {list(embedding_dims)}"
            )
        width = embedding_dims[0]
        if top == "none":
            if width != task.output_dim:
                raise ConfigError(
                    f"model.head.top = 'none' uses the parties' outputs as logits: set"
                    f" model.bottom.embedding_dim to {task.output_dim} (the task's logits), not"
                    f" {width}"
                )
            return SumHead(nn.Identity(), mean=fusion == "mean")
        body = MLP(width, tuple(hidden), task.output_dim, activation_name=activation)
        return SumHead(body, mean=fusion == "mean")
    if fusion != "concat":
        raise ConfigError(f"model.head.fusion: unknown {fusion!r}; valid: {', '.join(FUSIONS)}")
    body = MLP(sum(embedding_dims), tuple(hidden), task.output_dim, activation_name=activation)
    return ConcatHead(body)
