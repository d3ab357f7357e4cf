"""What a party holds beyond its own features when it also sees labels.

With shared labels (C-VFL Algorithm 1) every party holds the labels and a replica of the head:
every round the server broadcasts every party's stale compressed embedding and the compressed
server model; a party decodes the others' embeddings (``decode_view``) and loads the server model
into its replica (``load_vector``), then takes its local steps against that stale view.

The active party (FedBCD's party K) lives with the label holder: its block is its own bottom and
the head itself (``ActiveBlock``), and its local steps are exact at the others' stale embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from vfl.compress.codec import MessageSeeds, TensorCodec
from vfl.errors import WireError
from vfl.results.metrics import Task
from vfl.wire import ViewBroadcast
from vfl.wire.seeds import SeedLabel


@dataclass
class SharedLabels:
    """What a party holds when labels are shared (C-VFL Algorithm 1).

    Attributes:
        labels: The training labels, ``(N,)``.
        task: The task (loss).
        head: A replica of the server model, refreshed from each round's broadcast.
        widths: Every party's embedding width, by party id (to decode the broadcast).
        embeddings: Decodes the other parties' embedding payloads.
        server_model: Decodes the flattened server model.
    """

    labels: torch.Tensor
    task: Task
    head: nn.Module
    widths: dict[int, int]
    embeddings: TensorCodec
    server_model: TensorCodec


@dataclass
class ActiveBlock:
    """The label holder's share of the active party's block (FedBCD's party K).

    Attributes:
        head: The server's head itself (the same module: the active party lives in the server's
            process), trained jointly with the party's bottom.
        head_optimizer: The head's optimizer (``None`` for a head without parameters).
        labels: The training labels, ``(N,)``.
        task: The task (loss).
        position: This party's index among all parties, in party order (its slot in the head's
            input list).
    """

    head: nn.Module
    head_optimizer: torch.optim.Optimizer | None
    labels: torch.Tensor
    task: Task
    position: int

    def view(self, others: tuple[torch.Tensor, ...]) -> list[torch.Tensor | None]:
        """The head's inputs with ``None`` in this party's slot."""
        inputs: list[torch.Tensor | None] = list(others)
        inputs.insert(self.position, None)
        return inputs


def decode_view(
    shared: SharedLabels, broadcast: ViewBroadcast, seeds: MessageSeeds, *, batch: int, own: int
) -> list[torch.Tensor | None]:
    """The stale embeddings of every party in a broadcast (``None`` in this party's place)."""
    if len(broadcast.embeddings) != len(shared.widths):
        raise WireError(
            f"view holds {len(broadcast.embeddings)} embeddings for {len(shared.widths)} parties"
        )
    view: list[torch.Tensor | None] = []
    for (party, width), payload in zip(shared.widths.items(), broadcast.embeddings, strict=True):
        if party == own:
            view.append(None)
            continue
        seed = seeds.for_message(SeedLabel.EMBEDDING, broadcast.round, party)
        view.append(
            shared.embeddings.decode(
                payload, shape=(batch, width), seed=seed, round_=broadcast.round
            )
        )
    return view


def load_vector(
    module: nn.Module, codec: TensorCodec, payload: bytes, seed: int, round_: int
) -> None:
    """Overwrite ``module``'s parameters with a decoded flat parameter vector."""
    count = sum(p.numel() for p in module.parameters())
    if count == 0:
        if payload:
            raise WireError(f"a server model without parameters came with {len(payload)} bytes")
        return
    vector = codec.decode(payload, shape=(count,), seed=seed, round_=round_)
    vector = vector.to(next(module.parameters()).device, non_blocking=True)
    with torch.no_grad():
        nn.utils.vector_to_parameters(vector, module.parameters())
