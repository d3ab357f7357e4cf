"""A Gaussian defense of the labels: the label holder clips and noises the gradients it sends.

Every party learns ``d loss / d h`` for each sample of each round, and those gradients carry the
labels (Li et al., "Label Leakage and Protection in Two-party Split Learning", ICLR 2022). This
stage clips each sample's own loss gradient row to L2 norm ``C`` and adds ``N(0, (z C)² I)`` to
it before the row leaves the label holder, as DP-SGD does to per-example parameter gradients
(Abadi et al. 2016), here to the per-example *activation* gradients of split learning.

What the accountant states (``event``): changing one sample's label changes only that sample's
clipped row in the round that uses it, by at most ``2C`` (replace-one adjacency), so one release
is the Gaussian mechanism with sensitivity ``2C`` and noise ``zC``. Every party's row gets a
noise draw of its own (``SplitLearning.noised_gradients``), even where the rows are equal (a sum
or mean head): with shuffled epochs each party holds one release per sample and epoch, and a
coalition of ``M`` passive parties pooling its copies holds ``M``, which the loop's accountant
counts (``label_releases``; ``label_epsilon``; one party's own figure is
``label_epsilon_one_party``). Sending every party one shared noised row instead would have
stated the one-release epsilon for any coalition, but it moved the attack (docs/privacy.md).
Like PBM's figure (docs/privacy.md), this is a per-sample, direct-release statement: the head's
own updates, which depend on every label, shape later gradients and are not noised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from vfl.errors import ConfigError
from vfl.privacy.events import GaussianEvent

LABEL_SENSITIVITY = 2.0
"""A label change moves one clipped gradient row anywhere in the ball of radius C: at most 2C."""


@dataclass
class GradientNoise:
    """Per-sample clipping and Gaussian noise of the gradients the label holder sends.

    Attributes:
        clip: ``C``, the L2 bound of each sample's gradient row (> 0).
        noise_multiplier: ``z``: the noise standard deviation is ``z C`` per coordinate (> 0).
        generator: The noise's randomness (seeded in simulation, the OS's in a deployment).
    """

    clip: float
    noise_multiplier: float
    generator: torch.Generator

    def __post_init__(self) -> None:
        if not (self.clip > 0 and self.noise_multiplier > 0):
            raise ConfigError(
                "gradient noise needs clip > 0 and noise_multiplier > 0, got"
                f" {self.clip} and {self.noise_multiplier}"
            )

    def apply(self, grad: torch.Tensor) -> torch.Tensor:
        """``(clip_C(B g_i) + N(0, (zC)² I)) / B`` for every row ``g_i`` of ``grad`` (``(B, P)``).

        ``grad`` is the gradient of the batch's *mean* loss, so ``B g_i`` is sample ``i``'s own
        loss gradient: clipping and noise are on that scale, whatever the batch size.
        """
        batch = len(grad)
        rows = grad.reshape(batch, -1) * batch
        norms = rows.norm(dim=1, keepdim=True)
        clipped = rows * torch.clamp(self.clip / norms.clamp_min(1e-12), max=1.0)
        noise = torch.randn(clipped.shape, generator=self.generator, dtype=torch.float64)
        noised = clipped + noise.to(clipped.dtype) * (self.noise_multiplier * self.clip)
        return (noised / batch).reshape(grad.shape)

    def event(self) -> GaussianEvent:
        """One release of one sample's (clipped, noised) gradient row."""
        return GaussianEvent(self.noise_multiplier, sensitivity=LABEL_SENSITIVITY)

    def state_dict(self) -> dict[str, Any]:
        """The generator's state: a resumed run draws what an uninterrupted one would."""
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue the noise stream from ``state_dict``."""
        self.generator.set_state(state["generator"])
