"""The Poisson Binomial Mechanism (PBM) on bounded embeddings.

VFL-PBM paper ("Privacy Tradeoffs in Vertical Federated Learning", Tran et al.) Algorithm 1 and
§2.2, after Chen, Özgür and Kairouz (ICML 2022). Notation: clip bound ``C``, trials ``b``, spread
``β``, ``M`` contributing parties. Each coordinate ``x`` in ``[-C, C]`` becomes
``q ~ Binomial(b, p)`` with ``p = 1/2 + (β/C) x``, an integer in ``{0..b}``; the server decodes
the sum ``Q`` of ``M`` parties' counts into the unbiased estimate ``(C / (β b)) (Q - b M / 2)`` of
the sum of inputs.

Example:
    >>> import torch
    >>> pbm = PoissonBinomialMechanism(clip=1.0, trials=16, beta=0.25)
    >>> from vfl.privacy.binomial import ChaChaBinomial
    >>> counts = pbm.privatize(torch.zeros(2, 3), sampler=ChaChaBinomial.from_seed(0))
    >>> counts.dtype, counts.shape, pbm.count_bits, pbm.sum_bits(4)
    (torch.int64, torch.Size([2, 3]), 5, 7)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from vfl.errors import ConfigError, WireError
from vfl.privacy.binomial import CountSampler, TorchBinomial
from vfl.privacy.events import PbmEvent


@dataclass(frozen=True)
class PoissonBinomialMechanism:
    """PBM with clip bound ``clip`` (C), ``trials`` (b) and ``beta`` (β); one instance per party.

    Args:
        clip: ``C > 0``; inputs must lie in ``[-C, C]``.
        trials: ``b >= 1`` Bernoulli trials per coordinate.
        beta: ``β`` in ``(0, 1/4]``; the success probability spans ``[1/2 - β, 1/2 + β]``.
        clamp: Clamp inputs to ``[-C, C]`` instead of refusing them. Off by default: a bound that
            the model does not enforce should fail loudly, not be hidden.
    """

    clip: float
    trials: int
    beta: float
    clamp: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.clip) and self.clip > 0):
            raise ConfigError(f"clip (C) must be a finite number > 0, got {self.clip}")
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 1:
            raise ConfigError(f"trials (b) must be an integer >= 1, got {self.trials!r}")
        if not 0.0 < self.beta <= 0.25:
            raise ConfigError(f"beta must lie in (0, 1/4], got {self.beta}")

    @property
    def count_bits(self) -> int:
        """Bits of one count in ``{0..b}``: ``ceil(log2(b + 1))`` (spec §1.3)."""
        return self.trials.bit_length()

    def sum_bits(self, contributors: int) -> int:
        """Bits of a sum of ``contributors`` counts in ``{0..M b}``: ``ceil(log2(M b + 1))``."""
        _check_contributors(contributors)
        return (contributors * self.trials).bit_length()

    def privatize(
        self, x: torch.Tensor, *, sampler: CountSampler | torch.Generator
    ) -> torch.Tensor:
        """Counts ``q ~ Binomial(b, 1/2 + (β/C) x)``, int64 in ``{0..b}``, same shape as ``x``.

        ``sampler`` draws them: ``ChaChaBinomial`` (exact, from a ChaCha20 keystream) or
        ``TorchBinomial``; a bare ``torch.Generator`` means ``TorchBinomial`` with it.

        Raises:
            ConfigError: if ``x`` is not floating point, has a non-finite entry, or (without
                ``clamp``) an entry outside ``[-C, C]``.
        """
        if not x.is_floating_point():
            raise ConfigError(f"PBM inputs must be floating point, got dtype {x.dtype}")
        inputs = x.detach().to(device="cpu", dtype=torch.float64)
        # One pass finds the largest magnitude; NaN and infinity both make it non-finite.
        largest = float(inputs.abs().max()) if inputs.numel() else 0.0
        if not math.isfinite(largest):
            raise ConfigError("PBM inputs contain NaN or infinite values")
        if self.clamp:
            inputs = inputs.clamp(-self.clip, self.clip)
        elif largest > self.clip:
            raise ConfigError(
                f"PBM input with |x| = {largest} exceeds the clip bound C = {self.clip};"
                " bound the embedding (e.g. tanh with C = 1) or construct with clamp=True"
            )
        prob = 0.5 + (self.beta / self.clip) * inputs
        if isinstance(sampler, torch.Generator):
            sampler = TorchBinomial(sampler)
        return torch.from_numpy(sampler.binomial(self.trials, prob.numpy()))

    def estimate(
        self, summed_counts: torch.Tensor, *, contributors: int, dtype: torch.dtype = torch.float32
    ) -> torch.Tensor:
        """Unbiased estimate ``(C / (β b)) (Q - b M / 2)`` of the sum of ``M`` parties' inputs.

        Raises:
            ConfigError: if ``contributors`` is not an integer >= 1.
            WireError: if the counts are not integers in ``{0..M b}`` (no valid sum is).
        """
        _check_contributors(contributors)
        if summed_counts.is_floating_point() or summed_counts.is_complex():
            raise WireError(f"summed counts must be integers, got dtype {summed_counts.dtype}")
        top = contributors * self.trials
        if summed_counts.numel():
            low, high = int(summed_counts.min()), int(summed_counts.max())
            if low < 0 or high > top:
                raise WireError(
                    f"summed counts span [{low}, {high}], outside [0, {top}] = [0, M b]"
                    f" for M={contributors}, b={self.trials}"
                )
        scale = self.clip / (self.beta * self.trials)
        centred = summed_counts.to(torch.float64) - self.trials * contributors / 2
        return (scale * centred).to(dtype)

    def estimate_variance(self, inputs: torch.Tensor) -> torch.Tensor:
        """Exact variance of ``estimate`` when party ``m`` holds ``inputs[m]`` (shape ``(M, ...)``).

        ``Var = (C / (β b))² Σ_m b p_m (1 - p_m) = C² M / (4 β² b) - Σ_m x_m² / b``, at most
        ``C² M / (4 β² b)`` (paper Theorem 2.5 item 2; exact form spec §4 item 3).
        """
        prob = 0.5 + (self.beta / self.clip) * inputs.to(torch.float64)
        scale = self.clip / (self.beta * self.trials)
        return scale**2 * (self.trials * prob * (1.0 - prob)).sum(dim=0)

    def event(self, *, parties: int, dimension: int, worst_case: bool = True) -> PbmEvent:
        """The accountant's record of one release of one sample's ``dimension``-wide embedding."""
        return PbmEvent(
            trials=self.trials,
            beta=self.beta,
            parties=parties,
            dimension=dimension,
            worst_case=worst_case,
        )


def _check_contributors(contributors: int) -> None:
    if isinstance(contributors, bool) or not isinstance(contributors, int) or contributors < 1:
        raise ConfigError(f"contributors (M) must be an integer >= 1, got {contributors!r}")
