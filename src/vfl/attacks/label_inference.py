"""Label inference by a passive party from the gradients it receives.

Li et al., "Label Leakage and Protection in Two-party Split Learning", ICLR 2022 (the two
attacks of their label-leakage section): a party that receives ``g_i = d loss / d h_i`` for each
sample of a batch can score it

- by **norm** ("norm scoring"): ``||g_i||₂``. With a logistic head the gradient is
  ``(σ(z_i) − y_i) ∂z_i/∂h_i``, and on imbalanced data the rarer positive class gets the larger
  ``|σ − y|``;
- by **direction** ("direction scoring"): ``cos(g_i, g_ref)`` with the gradient of a sample known
  to be positive. With a single logit, ``g_i`` points along ``−∂z/∂h`` for positives and
  ``+∂z/∂h`` for negatives, so the cosine is ``+1`` within a class and ``−1`` across classes
  (exactly so for a linear head).

For more than two classes, when the party's output is its share of the logits (a head that only
adds the parties' outputs, ``model.head.top = "none"``), the gradient of softmax cross-entropy is
``(p_i − e_{y_i}) / B`` (times ``1/M`` for a mean): its only negative coordinate is the label
(**direct** inference: the direct label inference of Fu et al., "Label Inference Attacks Against
Vertical Federated Learning", USENIX Security 2022, on VFL without a trainable top model). With
a trainable head it does not apply; model completion does.

Each score is the one from the latest round a sample was seen in (its latest epoch).
"""

from __future__ import annotations

from typing import Any

import torch

from vfl.attacks.base import Attack, Inference, Knowledge, KnownLabels
from vfl.run.observe import Delivery

GRADIENTS = ("GradRequest", "CompressedGradRequest")


class LabelInference(Attack):
    """Norm and direction scoring (binary tasks) and direct inference (logit outputs).

    Args:
        rows: Rows of the training split (the party's own block has as many).
        known: The positive samples whose labels the attacker knows (direction's reference).
        num_classes: The task's classes.
        direct: Infer multiclass labels as the smallest gradient coordinate.
    """

    name = "label_inference"
    role = "party"

    def __init__(self, rows: int, known: KnownLabels, *, num_classes: int, direct: bool) -> None:
        self.known = known.ids[known.labels == 1]
        self.num_classes, self.direct = num_classes, direct
        self.norm = torch.full((rows,), torch.nan, dtype=torch.float64)
        self.direction = torch.full((rows,), torch.nan, dtype=torch.float64)
        self.guess = torch.full((rows,), -1, dtype=torch.int64)
        self.reference: torch.Tensor | None = None
        self.waiting: list[tuple[torch.Tensor, torch.Tensor]] = []  # rounds before a reference

    def observe(self, delivery: Delivery) -> None:
        """Score the samples of every gradient the party receives."""
        if delivery.kind not in GRADIENTS or delivery.tensor is None or delivery.ids is None:
            return
        ids, grad = delivery.ids, delivery.tensor.to(torch.float64)
        self.norm[ids] = grad.norm(dim=1)
        if self.direct and self.num_classes > 2 and grad.shape[1] == self.num_classes:
            self.guess[ids] = grad.argmin(dim=1)
        own = torch.isin(ids, self.known)
        if own.any():
            self.reference = grad[own].mean(dim=0)
        if self.reference is None:
            self.waiting.append((ids, grad))
            return
        for waiting_ids, waiting_grad in [*self.waiting, (ids, grad)]:
            self.direction[waiting_ids] = _cosine(waiting_grad, self.reference)
        self.waiting.clear()

    def infer(self, own: Knowledge, *, seed: int) -> Inference:
        """Scores of every sample seen (those whose label it knew left out)."""
        seen = ~torch.isnan(self.norm)
        seen[self.known] = False
        ids = torch.nonzero(seen).flatten()
        if self.num_classes == 2:
            direction = self.direction[ids]
            return Inference(
                ids,
                scores={"norm": self.norm[ids], "direction": direction},
                labels=(direction > 0).to(torch.int64),
            )
        if (self.guess[ids] < 0).any():
            note = "direct inference needs gradients as wide as the classes (head.top = 'none')"
            return Inference(ids, notes={"multiclass": f"not applicable: {note}"})
        return Inference(ids, labels=self.guess[ids])

    def state_dict(self) -> dict[str, Any]:
        """Every sample's latest scores, the reference, and the rounds still waiting for one."""
        return {
            "norm": self.norm,
            "direction": self.direction,
            "guess": self.guess,
            "reference": self.reference,
            "waiting": list(self.waiting),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()``."""
        self.norm, self.direction = state["norm"], state["direction"]
        self.guess, self.reference = state["guess"], state["reference"]
        self.waiting = list(state["waiting"])


def _cosine(rows: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    norms = rows.norm(dim=1) * reference.norm()
    cosine: torch.Tensor = (rows @ reference) / norms.clamp_min(1e-300)
    return cosine
