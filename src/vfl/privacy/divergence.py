"""Exact Rényi divergence of the PBM sum for one coordinate, computed in log space.

Notation (VFL-PBM paper §2.2 and Algorithm 1; docs/privacy.md, "How the accountant computes ε"): a
party with input ``x`` in ``[-C, C]`` releases ``q ~ Binomial(b, p)`` with ``p = 1/2 + β x / C``;
the server sees only ``Q = Σ_m q_m`` over the ``M`` parties. When one party's input moves from
``-C`` to ``+C`` its success probability moves from ``p₋ = 1/2 - β`` to ``p₊ = 1/2 + β`` while the
other parties keep theirs, so the two laws of ``Q`` are ``Binomial(b, p₊) * A`` and
``Binomial(b, p₋) * A``, where ``*`` is convolution and ``A`` is the law of the other parties'
counts.

Every probability is held as its natural logarithm: with ``b = 256`` and ``M = 16`` the tails of
these laws lie far below the smallest double (``e^-745``), and at order ``α = 64`` the divergence is
dominated by exactly those tails. Divergences are in nats.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from vfl.errors import ConfigError

FloatArray = npt.NDArray[np.float64]


def log_sum_exp(values: npt.ArrayLike, *, axis: int = -1) -> FloatArray:
    """``log Σ exp(values)`` along ``axis``, exact for any magnitudes (``-inf`` entries allowed).

    Example:
        >>> float(log_sum_exp([-1000.0, -1000.0]))
        -999.3068528194401
    """
    array = np.asarray(values, dtype=np.float64)
    peak = np.max(array, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        total = np.log(np.sum(np.exp(array - peak), axis=axis))
    result: FloatArray = total + np.squeeze(peak, axis=axis)
    return result


def log_binomial_pmf(*, trials: int, prob: float) -> FloatArray:
    """``log P[K = k]`` for ``K ~ Binomial(trials, prob)``, ``k = 0..trials``, via ``lgamma``.

    Example:
        >>> np.exp(log_binomial_pmf(trials=2, prob=0.5)).round(6).tolist()
        [0.25, 0.5, 0.25]
    """
    if trials < 0:
        raise ConfigError(f"trials must be >= 0, got {trials}")
    if not 0.0 < prob < 1.0:
        raise ConfigError(f"prob must lie in (0, 1), got {prob}")
    k = np.arange(trials + 1, dtype=np.float64)
    log_factorials = np.array([math.lgamma(i + 1.0) for i in range(trials + 1)])
    log_choose = log_factorials[-1] - log_factorials - log_factorials[::-1]
    result: FloatArray = log_choose + k * math.log(prob) + (trials - k) * math.log1p(-prob)
    return result


CONVOLVE_BLOCK = 1 << 22
"""Values per block of ``log_convolve``'s work (32 MiB of float64, whatever the laws' sizes)."""
MAX_TRIALS = 4096
"""The largest PBM ``b`` vfl accounts for: the exact divergence costs about ``M b^2`` operations
(about a minute at ``b = 4096`` with 4 parties on one core); the paper uses ``b <= 256``."""


def log_convolve(first: FloatArray, second: FloatArray) -> FloatArray:
    """Log-space convolution: ``out[k] = log Σ_j exp(first[j] + second[k - j])``.

    Each output is its own log-sum-exp, so a tail value of ``e^-3000`` keeps full relative
    precision beside a mode of order one (a global rescaling would flush it to zero).

    Example:
        >>> half = np.log([0.5, 0.5])
        >>> np.exp(log_convolve(half, half)).round(6).tolist()
        [0.25, 0.5, 0.25]
    """
    longer, shorter = (first, second) if len(first) >= len(second) else (second, first)
    width = len(shorter)
    padding = np.full(width - 1, -np.inf)
    padded = np.concatenate([padding, longer, padding])
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)  # (K, width), a view
    rows = max(1, CONVOLVE_BLOCK // width)  # outputs per block: memory stays bounded
    blocks = [
        log_sum_exp(windows[start : start + rows, ::-1] + shorter[None, :], axis=1)
        for start in range(0, len(windows), rows)
    ]
    result: FloatArray = np.concatenate(blocks)
    return result


def renyi_divergence(*, log_p: FloatArray, log_q: FloatArray, orders: npt.ArrayLike) -> FloatArray:
    """Rényi divergence ``D_α(P‖Q)`` in nats at each order ``α > 1`` (``α = inf`` allowed).

    ``D_α(P‖Q) = 1/(α-1) · log Σ_k P(k)^α Q(k)^(1-α)`` (Mironov 2017, Definition 3; paper
    Definition 2.2), evaluated as a log-sum-exp of ``α log P + (1-α) log Q``; its limit
    ``D_∞(P‖Q) = max_k log(P(k)/Q(k))`` over the support of ``P`` at ``α = inf``.

    Example:
        >>> coin = np.log([0.5, 0.5])
        >>> renyi_divergence(log_p=coin, log_q=coin, orders=[2.0]).tolist()
        [0.0]
    """
    alphas = check_orders(orders)
    if log_p.shape != log_q.shape:
        raise ConfigError(f"log_p and log_q differ in shape: {log_p.shape} vs {log_q.shape}")
    support = ~np.isneginf(log_p)
    finite = np.isfinite(alphas)
    a = np.where(finite, alphas, 2.0)[:, None]
    with np.errstate(invalid="ignore"):
        terms = a * log_p[None, :] + (1.0 - a) * log_q[None, :]  # (orders, K)
    terms = np.where(support[None, :], terms, -np.inf)
    result: FloatArray = log_sum_exp(terms, axis=1) / (a[:, 0] - 1.0)
    if not np.all(finite):
        worst_ratio = float(np.max(log_p[support] - log_q[support]))
        result = np.where(finite, result, worst_ratio)
    return result


def others_log_pmf(*, trials: int, beta: float, other_probs: Sequence[float]) -> FloatArray:
    """Log-law of the other parties' summed counts, each ``Binomial(trials, p_j)``.

    Parties with equal ``p_j`` are merged first (``c`` such counts sum to ``Binomial(c·trials,
    p_j)``), so the cost grows with the number of distinct probabilities, not of parties.

    Raises:
        ConfigError: if a ``p_j`` lies outside ``[1/2 - beta, 1/2 + beta]``, the range that inputs
            in ``[-C, C]`` produce.
    """
    low, high = 0.5 - beta, 0.5 + beta
    for prob in other_probs:
        if not low - 1e-12 <= prob <= high + 1e-12:
            raise ConfigError(
                f"other party's success probability {prob} lies outside [{low}, {high}]"
                f" = [1/2 - beta, 1/2 + beta] for beta={beta}"
            )
    law = np.zeros(1)
    for prob, count in sorted(Counter(other_probs).items()):
        law = log_convolve(law, log_binomial_pmf(trials=count * trials, prob=prob))
    return law


def pbm_coordinate_rdp(
    *, trials: int, beta: float, other_probs: Sequence[float], orders: npt.ArrayLike
) -> FloatArray:
    """Exact RDP of one PBM sum coordinate when one party's input goes between ``-C`` and ``+C``.

    Returns ``max(D_α(P₊‖P₋), D_α(P₋‖P₊))`` per order, where ``P± = Binomial(b, 1/2 ± β) * A`` and
    ``A`` is the law of the other parties' counts with success probabilities ``other_probs``
    (docs/privacy.md, "How the accountant computes ε", step 1; the mechanism is the VFL-PBM
    paper's Theorem 2.5).
    The changed party's extremes ``±C`` are its worst pair: any other pair ``p, p'`` is obtained
    from ``p₊, p₋`` by one channel applied to each trial, which cannot increase the divergence.

    Example:
        >>> rdp = pbm_coordinate_rdp(trials=16, beta=0.05, other_probs=[0.5] * 3, orders=[2.0])
        >>> round(float(rdp[0]), 4)
        0.1602
    """
    check_mechanism(trials, beta)
    law = others_log_pmf(trials=trials, beta=beta, other_probs=other_probs)
    high = log_convolve(law, log_binomial_pmf(trials=trials, prob=0.5 + beta))
    low = log_convolve(law, log_binomial_pmf(trials=trials, prob=0.5 - beta))
    forward = renyi_divergence(log_p=high, log_q=low, orders=orders)
    backward = renyi_divergence(log_p=low, log_q=high, orders=orders)
    return np.maximum(forward, backward)


def check_mechanism(trials: int, beta: float) -> None:
    """Raise ``ConfigError`` unless ``trials`` is an integer >= 1 and ``0 < beta <= 1/4``."""
    if isinstance(trials, bool) or not isinstance(trials, int | np.integer) or trials < 1:
        raise ConfigError(f"trials (b) must be an integer >= 1, got {trials!r}")
    if trials > MAX_TRIALS:
        raise ConfigError(
            f"trials (b) = {trials} is more than vfl accounts for; use b <= {MAX_TRIALS} (its"
            " exact epsilon costs about M b^2 operations; the paper uses b <= 256)"
        )
    if not 0.0 < beta <= 0.25:
        raise ConfigError(f"beta must lie in (0, 1/4], got {beta}")


def check_orders(orders: npt.ArrayLike) -> FloatArray:
    """The orders as a float array; ``ConfigError`` unless a non-empty 1-D list of ``α > 1``.

    ``α = inf`` is allowed: ``D_∞`` is the pure-DP ``ε`` (Mironov 2017, Definition 4).
    """
    alphas = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if alphas.ndim != 1 or alphas.size == 0:
        raise ConfigError(f"orders must be a non-empty 1-D sequence, got shape {alphas.shape}")
    invalid = np.isnan(alphas) | (alphas <= 1.0)
    if np.any(invalid):
        raise ConfigError(f"Rényi orders must be > 1 (inf allowed), got {alphas[invalid][0]}")
    return alphas
