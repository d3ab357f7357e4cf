"""Checks on what reaches a party: the ids of a request and the gradient of an embedding.

Everything a party receives is checked on the host, where the wire left it, before it touches
the party's model: a malformed or hostile message fails with a ``WireError`` naming the party.
"""

from __future__ import annotations

import torch

from vfl.errors import WireError
from vfl.roles.party_options import PartyOptions
from vfl.wire import CompressedGradRequest, GradRequest
from vfl.wire.checks import all_finite, id_bounds
from vfl.wire.seeds import SeedLabel


def check_ids(ids: torch.Tensor, rows: int, party: int) -> torch.Tensor:
    """``ids``, checked: a non-empty 1-D int64 tensor of row positions below ``rows``.

    Raises:
        WireError: naming the party and what the ids are.
    """
    if ids.dtype != torch.int64 or ids.ndim != 1 or len(ids) == 0:
        raise WireError(
            f"party {party}: ids must be a non-empty 1-D int64 tensor, got shape"
            f" {tuple(ids.shape)} ({ids.dtype})"
        )
    low, high = id_bounds(ids)
    if low < 0 or high >= rows:
        raise WireError(f"party {party}: ids must lie in [0, {rows - 1}], got [{low}, {high}]")
    return ids


def received_grad(
    request: GradRequest | CompressedGradRequest,
    embedding: torch.Tensor,
    options: PartyOptions,
    party: int,
) -> torch.Tensor:
    """The decoded gradient for ``embedding``, checked on the host (where the wire left it).

    Raises:
        WireError: for a compressed gradient the party does not expect, or a gradient of
            another shape or dtype than the embedding, or one with non-finite values.
    """
    shape = tuple(embedding.shape)
    if isinstance(request, CompressedGradRequest):
        if options.gradient is None:
            raise WireError(f"party {party} expects uncompressed gradients")
        seed = options.seeds.for_message(SeedLabel.GRADIENT, request.round, party)
        grad = options.gradient.decode(
            request.payload, shape=shape, seed=seed, round_=request.round
        )
    else:
        grad = request.grad
    if tuple(grad.shape) != shape or grad.dtype != embedding.dtype:
        raise WireError(
            f"party {party}: gradient of shape {tuple(grad.shape)} ({grad.dtype}) for"
            f" an embedding of shape {shape} ({embedding.dtype})"
        )
    if not all_finite(grad):
        raise WireError(
            f"party {party}: gradient for round {request.round} holds non-finite values"
        )
    return grad
