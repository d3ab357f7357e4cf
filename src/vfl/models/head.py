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
    """Sum (or average) the embeddings, all of the same width, and apply ``body``.

    Sum fusion is what secure aggregation and PBM need: the server only ever needs the sum. With
    ``body = nn.Identity()`` the head has no parameters: the parties' outputs are the logits'
    summands (the plain sum or mean of the parties' logits).

    Args:
        body: Any module mapping ``(B, P)`` to logits.
        mean: Divide the sum by the number of parties.
    """

    def __init__(self, body: nn.Module, *, mean: bool = False) -> None:
        super().__init__()
        self.body = body
        self.mean = mean
        self.fusion = "mean" if mean else "sum"

    def forward(self, embeddings: Sequence[torch.Tensor]) -> torch.Tensor:
        """Logits for a batch."""
        widths = {e.shape[1] for e in embeddings}
        if len(widths) != 1:
            raise ValueError(
                f"{self.fusion} fusion needs equal embedding widths, got {sorted(widths)}"
            )
        total = torch.stack(list(embeddings)).sum(dim=0)  # (B, P)
        if self.mean:
            total = total / len(embeddings)
        out: torch.Tensor = self.body(total)
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
