"""Server heads: fuse the parties' embeddings, then map them to logits.

A head takes the list of party embeddings in ascending party order, each ``(B, P_m)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class ConcatHead(nn.Module):
    """Concatenate the embeddings along the feature axis and apply ``body``.

    Args:
        body: Any module mapping ``(B, sum_m P_m)`` to logits.
    """

    fusion = "concat"

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, embeddings: Sequence[torch.Tensor]) -> torch.Tensor:
        """Logits for a batch."""
        out: torch.Tensor = self.body(torch.cat(list(embeddings), dim=1))  # (B, sum P_m)
        return out


class SumHead(nn.Module):
    """Sum the embeddings (all of the same width) and apply ``body``.

    Sum fusion is what secure aggregation and PBM need: the server only ever needs the sum.

    Args:
        body: Any module mapping ``(B, P)`` to logits.
    """

    fusion = "sum"

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, embeddings: Sequence[torch.Tensor]) -> torch.Tensor:
        """Logits for a batch."""
        widths = {e.shape[1] for e in embeddings}
        if len(widths) != 1:
            raise ValueError(f"sum fusion needs equal embedding widths, got {sorted(widths)}")
        out: torch.Tensor = self.body(torch.stack(list(embeddings)).sum(dim=0))  # (B, P)
        return out


class CombinedModel(nn.Module):
    """The whole VFL model in one module: bottoms, then the head (the centralized baseline).

    Args:
        bottoms: One bottom model per party, in party order.
        head: A head taking the list of embeddings.
    """

    def __init__(self, bottoms: Sequence[nn.Module], head: nn.Module) -> None:
        super().__init__()
        self.bottoms = nn.ModuleList(bottoms)
        self.head = head

    def forward(self, blocks: Sequence[torch.Tensor]) -> torch.Tensor:
        """Logits from every party's feature block."""
        embeddings = [bottom(x) for bottom, x in zip(self.bottoms, blocks, strict=True)]
        out: torch.Tensor = self.head(embeddings)
        return out
