"""Local iterations: the steps a role takes on one mini-batch between two exchanges.

FedBCD (Liu et al., Algorithm 2) and C-VFL (Castiglia et al., Algorithm 1) both let every role
take Q steps on the round's mini-batch with stale information from the other roles:

- ``gradient_steps``: labels private to the server. The party holds d loss / d H from the
  exchange and back-propagates it through its *current* model at every step (the
  default choice: labels never leave the server).
- ``view_steps``: labels shared (C-VFL Algorithm 1, or FedBCD's exact partial gradient at the
  stale point): the party holds the other parties' stale compressed embeddings and a stale copy
  of the server model, recomputes its own embedding, and descends the real loss.

Both add FedPBCD's proximal term mu/2 * ||theta - theta_sync||^2 (Liu et al., eq. 15) when
``proximal_mu > 0``, with theta_sync the parameters at the start of the round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from vfl.results.metrics import Task


@dataclass(frozen=True)
class LocalSteps:
    """How many steps a role takes per round and with which proximal weight.

    Attributes:
        count: Q, the local iterations per exchange (>= 1).
        proximal_mu: mu of the proximal term (0 disables it).
    """

    count: int = 1
    proximal_mu: float = 0.0

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"local steps must be >= 1, got {self.count}")
        if self.proximal_mu < 0:
            raise ValueError(f"proximal_mu must be >= 0, got {self.proximal_mu}")


Closure = Callable[[], tuple[torch.Tensor, torch.Tensor | None]]
"""Computes, from the current parameters, what to back-propagate: an output with a graph and
the gradient to seed it with (``None`` for a scalar loss)."""


def snapshot(model: nn.Module) -> list[torch.Tensor]:
    """Detached copies of ``model``'s parameters (theta_sync of the proximal term)."""
    return [p.detach().clone() for p in model.parameters()]


def back_propagate(output: torch.Tensor, seed: torch.Tensor | None) -> None:
    """Back-propagate ``seed`` (d loss / d output) through ``output``'s graph.

    With a seed, as the backward pass of the scalar ``sum(output * seed)``, whose gradient with
    respect to ``output`` is ``seed`` bit for bit: ``torch.autograd.backward(output, seed)``
    imports torch's symbolic shapes (and sympy with them, 0.3 s) on its first call, only to
    compare the two shapes, which is done here.

    Raises:
        ValueError: if ``seed``'s shape is not ``output``'s.
    """
    if seed is None:
        torch.autograd.backward(output)
        return
    if seed.shape != output.shape:
        raise ValueError(
            f"a gradient of shape {tuple(seed.shape)} cannot seed an output of shape"
            f" {tuple(output.shape)}"
        )
    torch.autograd.backward(torch.sum(output * seed))


def descend(
    model: nn.Module,
    optimizer: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] | None,
    objectives: Sequence[Closure],
    *,
    proximal_mu: float = 0.0,
    anchor: list[torch.Tensor] | None = None,
) -> None:
    """Take one optimizer step per objective, adding the proximal gradient if asked.

    ``anchor`` is theta_sync; by default the parameters before the first of these steps. A
    model whose parts keep their own optimizers passes them all; a model without parameters has
    no ``optimizer``: its objectives are still back-propagated (to reach the gradients of its
    inputs) but nothing is stepped.
    """
    if optimizer is None:
        optimizers: list[torch.optim.Optimizer] = []
    elif isinstance(optimizer, torch.optim.Optimizer):
        optimizers = [optimizer]
    else:
        optimizers = list(optimizer)
    if not optimizers:
        for objective in objectives:
            back_propagate(*objective())
        return
    if proximal_mu == 0:
        anchor = []
    elif anchor is None:
        anchor = snapshot(model)
    for objective in objectives:
        for part in optimizers:
            part.zero_grad(set_to_none=True)
        back_propagate(*objective())
        if proximal_mu:  # walking the parameters costs a cold call a step even with no anchor
            _add_proximal_gradient(model, anchor, proximal_mu)
        for part in optimizers:
            part.step()


def _add_proximal_gradient(model: nn.Module, anchor: list[torch.Tensor], mu: float) -> None:
    """``grad += mu (theta - theta_sync)``: the gradient of mu/2 * ||theta - theta_sync||^2."""
    for param, start in zip(model.parameters(), anchor, strict=True):
        if param.grad is not None:
            param.grad.add_(param.detach() - start, alpha=mu)


def gradient_steps(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    inputs: Callable[[], torch.Tensor],
    grad: torch.Tensor,
    first_embedding: torch.Tensor | None,
    steps: LocalSteps,
) -> None:
    """Q steps that back-propagate the stale ``grad`` (B, P) through the current model.

    The first step reuses ``first_embedding`` (the graph kept from the upload), so Q = 1 is
    exactly split learning's update; later steps recompute the embedding of the same batch,
    whose rows ``inputs()`` fetches (once, and only if a step needs them).
    """
    state = {"first": first_embedding}
    rows: list[torch.Tensor] = []

    def objective() -> tuple[torch.Tensor, torch.Tensor]:
        embedding = state.pop("first", None)
        if embedding is None:
            if not rows:
                rows.append(inputs())
            embedding = model(rows[0])
        return embedding, grad  # backward gives J^T g: the chain rule with a stale g

    descend(model, optimizer, [objective] * steps.count, proximal_mu=steps.proximal_mu)


def view_steps(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    inputs: torch.Tensor,
    view: Sequence[torch.Tensor | None],
    head: nn.Module,
    labels: torch.Tensor,
    task: Task,
    steps: LocalSteps,
    on_embedding_grad: Callable[[torch.Tensor], None] | None = None,
) -> torch.Tensor:
    """Q steps on the real loss with the other blocks of ``view`` frozen (C-VFL Algorithm 1).

    Args:
        model: This party's bottom model.
        optimizer: Its optimizer.
        inputs: This party's features of the round's batch.
        view: The stale embeddings of every party in order, with ``None`` where this party's own
            fresh embedding goes.
        head: The stale (decompressed) server model; its parameters are not updated.
        labels: The batch's labels (labels are shared in this mode).
        task: The task (loss).
        steps: Q and the proximal weight.
        on_embedding_grad: Called with d loss / d (own embedding) after each step (e.g. to keep
            top-k selection scores).

    Returns:
        The loss of the last step, detached, where the model is (reading it waits for the
        device: nothing in a round needs to).
    """
    losses: list[torch.Tensor] = []

    def objective() -> tuple[torch.Tensor, None]:
        own = model(inputs)
        if on_embedding_grad is not None:
            own.register_hook(_observer(on_embedding_grad))
        embeddings = [own if block is None else block for block in view]
        loss = task.loss(head(embeddings), labels)
        losses.append(loss.detach())
        return loss, None

    head.requires_grad_(False)
    descend(model, optimizer, [objective] * steps.count, proximal_mu=steps.proximal_mu)
    return losses[-1]


def block_steps(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    head: nn.Module,
    head_optimizer: torch.optim.Optimizer | None,
    inputs: torch.Tensor,
    view: Sequence[torch.Tensor | None],
    labels: torch.Tensor,
    task: Task,
    steps: LocalSteps,
) -> torch.Tensor:
    """Q exact steps of the label holder's block: its own bottom ``model`` and the ``head``.

    FedBCD's party K holds the labels, a feature block and the top of the model; its Q local
    steps are exact partial gradients at ``[stale others, its current block]`` (Liu et al.,
    Algorithm 2): every step recomputes its own
    embedding with its current bottom, fuses it with the other parties' embeddings from the
    round's exchange (``view``, ``None`` in its own place) in its current head, and descends the
    real loss in both. The proximal term (``proximal_mu``) anchors both at the round's start.

    Returns:
        The loss of the first step (at the synchronization point), detached, where the model
        is.
    """
    losses: list[torch.Tensor] = []
    block = nn.ModuleList([model, head])
    optimizers = [opt for opt in (optimizer, head_optimizer) if opt is not None]

    def objective() -> tuple[torch.Tensor, None]:
        own = model(inputs)
        embeddings = [own if other is None else other for other in view]
        loss = task.loss(head(embeddings), labels)
        losses.append(loss.detach())
        return loss, None

    descend(block, optimizers, [objective] * steps.count, proximal_mu=steps.proximal_mu)
    return losses[0]


def _observer(callback: Callable[[torch.Tensor], None]) -> Callable[[torch.Tensor], None]:
    """A tensor hook that shows the gradient to ``callback`` and leaves it unchanged."""

    def hook(grad: torch.Tensor) -> None:
        callback(grad.detach())

    return hook
