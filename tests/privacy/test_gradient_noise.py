"""The label holder's Gaussian gradient noise: clipping, noise scale, and its epsilon checked
against independent computations (closed-form Gaussian RDP, and the exact privacy curve of a
composed Gaussian mechanism)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.errors import ConfigError
from vfl.privacy.accountant import RdpAccountant
from vfl.privacy.budget import EpochBudget, GaussianEpochBudget
from vfl.privacy.events import GaussianEvent
from vfl.privacy.gradient_noise import LABEL_SENSITIVITY, GradientNoise


def _noise(clip: float, multiplier: float, seed: int = 0) -> GradientNoise:
    return GradientNoise(clip, multiplier, torch.Generator().manual_seed(seed))


@settings(max_examples=30, deadline=None)
@given(
    clip=st.floats(0.01, 10.0),
    batch=st.integers(1, 64),
    scale=st.floats(1e-3, 1e3),
    seed=st.integers(0, 2**31 - 1),
)
def test_every_sample_s_gradient_row_is_clipped_to_norm_c(
    clip: float, batch: int, scale: float, seed: int
) -> None:
    # Prepare: the gradient of a mean loss (each sample's own row is B times its row here)
    grad = torch.randn(batch, 8, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    grad = grad * scale / batch
    stage = _noise(clip, 1e-12, seed)

    # Execute
    sent = stage.apply(grad) * batch

    # Assert: min(||B g_i||, C), direction kept
    own = grad * batch
    expected = torch.clamp(own.norm(dim=1), max=clip)
    assert torch.allclose(sent.norm(dim=1), expected, rtol=1e-6, atol=1e-9)
    cosine = (sent * own).sum(dim=1) / (sent.norm(dim=1) * own.norm(dim=1))
    assert torch.allclose(cosine, torch.ones(batch, dtype=torch.float64), atol=1e-6)


def test_the_noise_has_standard_deviation_z_times_c_per_coordinate() -> None:
    # Prepare: zero gradients: what is sent is the noise alone
    batch, clip, multiplier = 200, 0.5, 3.0
    stage = _noise(clip, multiplier, seed=1)

    # Execute
    sent = stage.apply(torch.zeros(batch, 500, dtype=torch.float64)) * batch

    # Assert: 100,000 draws: the sample std is within 1 % of z C (its error is ~0.2 %)
    assert abs(float(sent.std()) / (multiplier * clip) - 1.0) < 0.01
    assert abs(float(sent.mean())) < 0.02 * multiplier * clip


def test_a_resumed_noise_stream_continues_where_it_stopped() -> None:
    # Prepare
    whole, first = _noise(1.0, 1.0, seed=5), _noise(1.0, 1.0, seed=5)
    grad = torch.zeros(4, 3)
    whole.apply(grad)
    expected = whole.apply(grad)
    first.apply(grad)

    # Execute
    second = _noise(1.0, 1.0, seed=99)
    second.load_state_dict(first.state_dict())

    # Assert
    assert torch.equal(second.apply(grad), expected)


@pytest.mark.parametrize(("clip", "multiplier"), [(0.0, 1.0), (1.0, 0.0), (-1.0, 1.0)])
def test_a_noise_without_a_positive_clip_and_multiplier_is_refused(
    clip: float, multiplier: float
) -> None:
    with pytest.raises(ConfigError, match="clip > 0 and noise_multiplier > 0"):
        _noise(clip, multiplier)


def test_one_release_is_a_gaussian_of_sensitivity_2c() -> None:
    assert _noise(2.0, 0.7).event() == GaussianEvent(0.7, sensitivity=LABEL_SENSITIVITY)
    assert LABEL_SENSITIVITY == 2.0


@settings(max_examples=40, deadline=None)
@given(multiplier=st.floats(0.3, 20.0), epochs=st.integers(1, 200))
def test_composed_gaussian_rdp_is_k_alpha_s2_over_2z2_at_every_order(
    multiplier: float, epochs: int
) -> None:
    # Prepare: the closed form (Mironov 2017, Proposition 7, composed additively)
    accountant = RdpAccountant()
    orders = np.asarray(accountant.orders, dtype=np.float64)
    finite = np.isfinite(orders)

    # Execute
    accountant.compose(GaussianEvent(multiplier, sensitivity=2.0), count=epochs)

    # Assert
    expected = epochs * orders[finite] * 2.0**2 / (2 * multiplier**2)
    assert np.allclose(accountant.rdp[finite], expected, rtol=1e-12)


def _exact_gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon of a Gaussian mechanism of sensitivity/noise ratio ``mu`` (mu-GDP).

    Balle and Wang 2018 (analytic Gaussian mechanism), Theorem 8; Dong, Roth and Su 2019,
    Corollary 2.13: ``δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``, decreasing in ``ε``; solved by
    bisection. ``K`` compositions of ratio ``s/z`` are one of ratio ``√K s/z``.
    """

    def phi(x: float) -> float:
        return 0.5 * math.erfc(-x / math.sqrt(2.0))

    def delta_of(eps: float) -> float:
        return phi(-eps / mu + mu / 2) - math.exp(eps) * phi(-eps / mu - mu / 2)

    low, high = 0.0, 1.0
    while delta_of(high) > delta:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if delta_of(middle) > delta else (low, middle)
    return high


@pytest.mark.parametrize(
    ("multiplier", "epochs"), [(1.0, 1), (2.0, 5), (4.0, 10), (8.0, 30), (20.0, 100)]
)
def test_the_reported_epsilon_bounds_the_exact_gaussian_epsilon_and_is_close_to_it(
    multiplier: float, epochs: int
) -> None:
    # Prepare
    delta = 1e-5
    exact = _exact_gaussian_epsilon(math.sqrt(epochs) * 2.0 / multiplier, delta)

    # Execute
    reported = GaussianEpochBudget(GaussianEvent(multiplier, sensitivity=2.0), delta).epsilon(
        epochs
    )
    rdp = EpochBudget(GaussianEvent(multiplier, sensitivity=2.0), delta).epsilon(epochs)

    # Assert: the reported (PLD) epsilon is an upper bound within 1e-4 of the exact one; the
    # RDP figure is sound too, with RDP's known slack
    assert exact <= reported <= exact * (1 + 1e-4) + 2e-5
    assert exact <= rdp <= 1.6 * exact + 0.5


@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0])
def test_the_exact_curve_matches_the_hockey_stick_divergence_integrated_numerically(
    mu: float,
) -> None:
    # Prepare: delta(eps) = integral of max(0, p - e^eps q), p = N(mu, 1), q = N(0, 1)
    delta = 1e-5
    eps = _exact_gaussian_epsilon(mu, delta)
    x = np.linspace(-40.0, 40.0 + mu, 2_000_001)
    p = np.exp(-((x - mu) ** 2) / 2) / math.sqrt(2 * math.pi)
    q = np.exp(-(x**2) / 2) / math.sqrt(2 * math.pi)

    # Execute
    integrated = float(np.trapezoid(np.maximum(0.0, p - math.exp(eps) * q), x))

    # Assert
    assert integrated == pytest.approx(delta, rel=1e-3)
