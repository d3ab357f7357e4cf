"""Privacy accounting for PBM on embeddings: pure, keyword-only functions (docs/privacy.md).

Notation: ``b`` trials, ``β`` the PBM spread (paper Algorithm 1), ``M`` parties, ``P`` embedding
coordinates, ``K`` uses of each sample, ``α`` a Rényi order, ``δ`` the DP failure probability.
All RDP values are in nats. The chain, step by step:

1. ``ε₁(α)``: exact RDP of one coordinate's secure sum, worst case over the other parties' inputs
   (``pbm_rdp``; see ``divergence`` and ``worstcase``).
2. ``ε_rel(α) = P · ε₁(α)``: one release of one sample's embedding. Adjacency changes one party's
   features of one sample, so its whole embedding may move within ``[-C, C]^P`` (ℓ∞), and the
   ``P`` coordinates are noised independently (spec §2.5 item 1; the paper's Theorem 5.1 omits P).
3. ``ε_tot(α) = K · ε_rel(α)``: composition over the uses of the sample (``compose_rdp``).
4. ``ε(δ) = min_α [ε_tot(α) + log(1/δ)/(α - 1)]`` (``rdp_to_epsilon``). The grid includes
   ``α = inf``: ``D_∞`` of one coordinate is ``b log((1 + 2β)/(1 - 2β))`` whatever the other
   parties hold (the likelihood ratio peaks at ``Q = Mb``), so PBM is also pure DP, and small
   budgets are not limited by the largest finite order.

Cross-checks that are NOT guarantees: ``gaussian_rdp`` (a normal approximation) and
``paper_relative_rdp`` / ``paper_relative_epsilon`` (the paper's big-O rate with its unknown
constant set to 1).
"""

from __future__ import annotations

import math
import warnings
from typing import Literal

import numpy as np
import numpy.typing as npt

from vfl.errors import ConfigError
from vfl.privacy.divergence import (
    FloatArray,
    check_mechanism,
    check_orders,
    pbm_coordinate_rdp,
)
from vfl.privacy.worstcase import search_worst_case

Conversion = Literal["mironov", "improved"]

DEFAULT_ORDERS: tuple[float, ...] = tuple(
    float(order)
    for order in np.concatenate(
        [
            1.0 + np.geomspace(1e-4, 0.9, 40),
            np.arange(2.0, 12.5, 0.5),
            [14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 128, 192, 256, np.inf],
        ]
    ).round(6)
)
"""Rényi orders: dense just above 1 (large budgets), up to 256, and ``inf`` (pure DP)."""


def pbm_rdp(
    *, trials: int, beta: float, parties: int, orders: npt.ArrayLike, worst_case: bool = True
) -> FloatArray:
    """Per-coordinate, per-release RDP ``ε₁(α)`` of PBM with secure summation, in nats.

    With ``worst_case`` (the default and the only setting that is a DP guarantee) the exact
    divergence is maximised over the other parties' inputs by ``worstcase.search_worst_case``;
    otherwise the others' inputs are all 0 (``p = 1/2``), a typical case and not a guarantee.
    docs/privacy.md, "How the accountant computes ε", step 1; mechanism of the VFL-PBM paper's
    Theorem 2.5.

    Example:
        >>> pbm_rdp(trials=16, beta=0.05, parties=4, orders=[2.0, 8.0]).round(3).tolist()
        [0.163, 0.654]
    """
    if worst_case:
        found = search_worst_case(trials=trials, beta=beta, parties=parties, orders=orders)
        return np.asarray(found.rdp, dtype=np.float64)
    return pbm_coordinate_rdp(
        trials=trials, beta=beta, other_probs=[0.5] * (parties - 1), orders=orders
    )


def gaussian_rdp(*, trials: int, beta: float, parties: int, orders: npt.ArrayLike) -> FloatArray:
    """Normal approximation of ``ε₁(α)``: ``2 α b β² / (M (1/4 - β²))`` (NOT a guarantee).

    A Gaussian with mean shift ``2bβ`` and the smallest variance ``Mb(1/4 - β²)`` has RDP
    ``α Δ² / (2σ²)`` (Mironov 2017, Proposition 7); docs/privacy.md, "Cross-checks". It matches the
    exact value for small ``β`` and is a cross-check only.

    Example:
        >>> round(float(gaussian_rdp(trials=16, beta=0.05, parties=4, orders=[2.0])[0]), 4)
        0.1616
    """
    check_mechanism(trials, beta)
    _check_count("parties", parties, minimum=1)
    alphas = check_orders(orders)
    result: FloatArray = 2.0 * alphas * trials * beta**2 / (parties * (0.25 - beta**2))
    return result


def gaussian_mechanism_rdp(
    *, noise_multiplier: float, sensitivity: float, orders: npt.ArrayLike
) -> FloatArray:
    """RDP of the Gaussian mechanism: ``α s² / (2 z²)`` (Mironov 2017, Proposition 7).

    ``s`` is the L2 sensitivity and ``z`` the noise standard deviation, in the same unit. At
    ``α = ∞`` the Gaussian mechanism has no finite divergence.

    Example:
        >>> gaussian_mechanism_rdp(noise_multiplier=2.0, sensitivity=2.0, orders=[2.0]).tolist()
        [1.0]
    """
    if not (noise_multiplier > 0 and sensitivity > 0):
        raise ConfigError(
            f"noise_multiplier and sensitivity must be > 0, got {noise_multiplier}, {sensitivity}"
        )
    alphas = check_orders(orders)
    result: FloatArray = alphas * sensitivity**2 / (2.0 * noise_multiplier**2)
    return result


def compose_rdp(*, per_coordinate: npt.ArrayLike, dimension: int, uses: float) -> FloatArray:
    """``ε_tot(α) = K · P · ε₁(α)``: ``P`` coordinates, ``K`` uses (spec §2.6 B items 2-3).

    RDP composes additively (Mironov 2017, Proposition 1), over coordinates and over uses.

    Example:
        >>> compose_rdp(per_coordinate=[0.5, 1.0], dimension=4, uses=3).tolist()
        [6.0, 12.0]
    """
    _check_count("dimension", dimension, minimum=1)
    if not (math.isfinite(uses) and uses >= 0):
        raise ConfigError(f"uses must be a finite number >= 0, got {uses}")
    values = np.asarray(per_coordinate, dtype=np.float64)
    if uses == 0:
        return np.zeros_like(values)
    result: FloatArray = uses * dimension * values
    return result


def expected_uses(*, rounds: int, batch_size: int, num_samples: int) -> float:
    """The paper's count of uses per sample, ``T·B/N`` (Theorem 5.1 proof): an EXPECTATION.

    Under independent batch sampling a sample can be used more often than this; with shuffled
    epochs the exact count is the number of epochs, which is what an honest bound composes.

    Example:
        >>> expected_uses(rounds=600, batch_size=100, num_samples=1000)
        60.0
    """
    _check_count("rounds", rounds, minimum=0)
    _check_count("batch_size", batch_size, minimum=1)
    _check_count("num_samples", num_samples, minimum=1)
    if batch_size > num_samples:
        raise ConfigError(f"batch_size {batch_size} exceeds num_samples {num_samples}")
    return rounds * batch_size / num_samples


def rdp_to_epsilon(
    *,
    orders: npt.ArrayLike,
    rdp: npt.ArrayLike,
    delta: float,
    conversion: Conversion = "mironov",
) -> tuple[float, float]:
    """``(ε, α*)``: the smallest ``ε`` over the orders for which ``(ε, δ)``-DP follows.

    ``mironov``: ``ε = ε_tot(α) + log(1/δ)/(α-1)`` (Mironov 2017, Proposition 3).
    ``improved``: ``ε = ε_tot(α) + log((α-1)/α) - (log δ + log α)/(α-1)`` (Canonne, Kamath and
    Steinke 2020, Proposition 12; Balle et al. 2020, Theorem 21); docs/privacy.md, "How the
    accountant computes ε", step 5.
    At ``α = inf`` both give ``ε = ε_tot(∞)`` (pure DP). Zero RDP at every order means identical
    output laws, hence ``ε = 0``. Warns when the best order is the smallest or the largest
    finite order of the grid (a wider grid may give a smaller ``ε``).

    Example:
        >>> orders = [2.0, 4.0, 8.0, 16.0, 32.0]
        >>> eps, order = rdp_to_epsilon(orders=orders, rdp=[0.1, 0.2, 0.4, 0.8, 1.6], delta=1e-5)
        >>> round(eps, 3), order
        (1.568, 16.0)
    """
    alphas = check_orders(orders)
    values = np.asarray(rdp, dtype=np.float64)
    if values.shape != alphas.shape:
        raise ConfigError(f"rdp has shape {values.shape}, orders {alphas.shape}: must match")
    if not 0.0 < delta < 1.0:
        raise ConfigError(f"delta must lie in (0, 1), got {delta}")
    if np.any(np.isnan(values)) or np.any(values < 0):
        raise ConfigError(f"rdp values must be >= 0 and not NaN, got {values.tolist()}")
    if np.all(values == 0.0):
        return 0.0, float(alphas[0])
    finite = np.isfinite(alphas)
    a = np.where(finite, alphas, 2.0)
    if conversion == "mironov":
        penalty = math.log(1.0 / delta) / (a - 1.0)
    elif conversion == "improved":
        penalty = np.log((a - 1.0) / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
    else:
        raise ConfigError(f"conversion must be 'mironov' or 'improved', got {conversion!r}")
    candidates = values + np.where(finite, penalty, 0.0)
    best = int(np.argmin(candidates))
    if not math.isfinite(candidates[best]):
        return math.inf, float(alphas[best])
    at_edge = alphas[best] == alphas.min() or alphas[best] == alphas.max()
    if len(alphas) > 1 and finite[best] and at_edge:
        warnings.warn(
            f"the optimal Rényi order {alphas[best]} is at the edge of the grid"
            f" [{alphas.min()}, {alphas.max()}]; epsilon may be smaller with a wider grid",
            stacklevel=2,
        )
    return max(0.0, float(candidates[best])), float(alphas[best])


def paper_relative_rdp(
    *, trials: int, beta: float, parties: int, uses: float, order: float
) -> float:
    """RELATIVE figure only: the paper's rate ``K b β² α / M`` with its unknown constant set to 1.

    Theorem 5.1 of the paper states ``ε_final(α) = O(T B b β² α / (M N))`` with no constant and no
    ``P``; this number compares settings with each other and is NOT a privacy guarantee.
    """
    check_mechanism(trials, beta)
    _check_count("parties", parties, minimum=1)
    return uses * trials * beta**2 * order / parties


def paper_relative_epsilon(
    *, trials: int, beta: float, parties: int, uses: float, delta: float
) -> float:
    """RELATIVE figure only: ``sqrt(K b β² / M · log(1/δ))``, the paper's Lemma 2.4 with c = 1.

    The lemma is a Θ statement with unknown constants; this is NOT a privacy guarantee.
    """
    if not 0.0 < delta < 1.0:
        raise ConfigError(f"delta must lie in (0, 1), got {delta}")
    rate = paper_relative_rdp(trials=trials, beta=beta, parties=parties, uses=uses, order=1.0)
    return math.sqrt(rate * math.log(1.0 / delta))


def _check_count(name: str, value: int, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
