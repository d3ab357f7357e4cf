"""The worst case of a coordinate's PBM RDP over the other parties' inputs.

docs/privacy.md, "How the accountant computes ε", step 2.

RDP is a supremum over adjacent inputs, and the other parties' inputs are part of the data set, so
the per-coordinate curve must be maximised over them. Two functions bracket that maximum:

- ``search_worst_case`` evaluates the exact divergence (``divergence.pbm_coordinate_rdp``) at named
  inputs of the other ``M - 1`` parties: all at 0 (the midpoint), every combination of extremes
  ``±C`` (the parties are exchangeable, so a combination is fixed by how many sit at ``+C``), then a
  coordinate search over a grid of inputs for small ``M``. Its result is attained by the inputs it
  reports, so it is a lower bound on the worst case.
- ``relaxation_bound`` lets each of the others' ``(M-1)·b`` Bernoulli trials take its own
  success probability in ``[1/2 - β, 1/2 + β]``, a superset of what real inputs produce.
  ``Σ P^α Q^(1-α)`` is jointly convex in ``(P, Q)`` for ``α > 1`` and both laws are affine in any
  one trial's probability, so the maximum sits at a vertex; by exchangeability a vertex is fixed
  by the number ``n`` of trials at ``1/2 + β``. The maximum over ``n = 0..(M-1)b`` is therefore a
  certified upper bound, and where a multiple of ``b`` attains it, so do real inputs: it is exact.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vfl.errors import ConfigError
from vfl.privacy.divergence import (
    FloatArray,
    check_mechanism,
    check_orders,
    log_binomial_pmf,
    log_convolve,
    pbm_coordinate_rdp,
    renyi_divergence,
)

DEFAULT_LEVELS = (-1.0, -0.5, 0.0, 0.5, 1.0)
Inputs = tuple[float, ...]


@dataclass(frozen=True)
class WorstCase:
    """The largest per-coordinate RDP found, per order, and the inputs that attain it.

    Attributes:
        orders: Rényi orders ``α``.
        rdp: The maximum found at each order, in nats.
        inputs: For each order, the other parties' inputs ``x_j / C`` (sorted) that attain it.
            Negating all of them gives the same value (the mirror ``k -> Mb - k`` swaps the two
            directions), so of each mirror pair the lexicographically larger one is reported.
        evaluated: How many distinct input combinations were evaluated.
    """

    orders: tuple[float, ...]
    rdp: tuple[float, ...]
    inputs: tuple[Inputs, ...]
    evaluated: int


@dataclass(frozen=True)
class RelaxationBound:
    """A certified upper bound on the per-coordinate worst case (see the module docstring).

    Attributes:
        orders: Rényi orders ``α``.
        rdp: The bound at each order, in nats.
        high_trials: For each order, the number ``n`` of the others' trials at ``1/2 + β`` that
            attains the bound (direction ``P₊‖P₋``; the mirror ``k -> Mb - k`` covers the other).
        trials: ``b``; the bound is attained by real inputs where ``n`` is a multiple of it.
    """

    orders: tuple[float, ...]
    rdp: tuple[float, ...]
    high_trials: tuple[int, ...]
    trials: int

    @property
    def attained(self) -> tuple[bool, ...]:
        """Per order: whether inputs (``n / b`` others at ``+C``, the rest at ``-C``) attain it."""
        return tuple(n % self.trials == 0 for n in self.high_trials)


def search_worst_case(
    *,
    trials: int,
    beta: float,
    parties: int,
    orders: npt.ArrayLike,
    levels: Sequence[float] = DEFAULT_LEVELS,
    refine_max_parties: int = 8,
    max_sweeps: int = 4,
) -> WorstCase:
    """Maximise the exact coordinate RDP over the other parties' inputs (spec §2.6 B).

    Candidates: all others at 0; every extreme combination; then, when ``parties <=
    refine_max_parties``, a coordinate search that moves one party at a time over ``levels``
    (inputs ``x / C``) while the sum over orders of ``log D_α`` rises. Every evaluated combination
    is a real adjacent pair, so the per-order maximum over all of them is attained.

    Example:
        >>> found = search_worst_case(trials=16, beta=0.05, parties=4, orders=[2.0])
        >>> round(found.rdp[0], 4), found.inputs[0]
        (0.1627, (1.0, 1.0, 1.0))
    """
    check_mechanism(trials, beta)
    _check_parties(parties)
    if any(not -1.0 <= level <= 1.0 for level in levels):
        raise ConfigError(f"levels are inputs x / C and must lie in [-1, 1], got {list(levels)}")
    search = _Search(trials, beta, check_orders(orders))
    others = parties - 1
    start = [(0.0,) * others] + [(-1.0,) * (others - n) + (1.0,) * n for n in range(others + 1)]
    best = max(start, key=search.objective)
    if others > 0 and parties <= refine_max_parties:
        _coordinate_search(search, best, sorted(set(levels)), max_sweeps)
    return search.result()


def relaxation_bound(
    *, trials: int, beta: float, parties: int, orders: npt.ArrayLike
) -> RelaxationBound:
    """Certified upper bound on the coordinate worst case: maximum over ``n`` trials at ``p₊``.

    With ``G_j`` the law of ``Mb`` trials of which ``j`` succeed w.p. ``p₊ = 1/2 + β`` and the rest
    w.p. ``p₋ = 1/2 - β``, the two laws of the sum at vertex ``n`` are ``G_{n+b}`` and ``G_n``; the
    cost is ``Mb + 1`` log-space convolutions (seconds for ``Mb`` in the low thousands).

    Example:
        >>> bound = relaxation_bound(trials=16, beta=0.05, parties=4, orders=[2.0])
        >>> round(bound.rdp[0], 4), bound.high_trials[0], bound.attained[0]
        (0.1627, 48, True)
    """
    check_mechanism(trials, beta)
    _check_parties(parties)
    alphas = check_orders(orders)
    total = parties * trials
    window: deque[FloatArray] = deque(maxlen=trials + 1)
    best = np.full(alphas.shape, -np.inf)
    where = np.zeros(alphas.shape, dtype=np.int64)
    for j in range(total + 1):
        high = log_binomial_pmf(trials=j, prob=0.5 + beta)
        low = log_binomial_pmf(trials=total - j, prob=0.5 - beta)
        window.append(log_convolve(high, low))
        if j >= trials:
            value = renyi_divergence(log_p=window[-1], log_q=window[0], orders=alphas)
            better = value > best
            best = np.where(better, value, best)
            where = np.where(better, j - trials, where)
    return RelaxationBound(
        orders=tuple(alphas.tolist()),
        rdp=tuple(best.tolist()),
        high_trials=tuple(int(n) for n in where),
        trials=trials,
    )


class _Search:
    """Memoised evaluation of input combinations (sorted tuples of ``x / C``)."""

    def __init__(self, trials: int, beta: float, orders: FloatArray) -> None:
        self.trials = trials
        self.beta = beta
        self.orders = orders
        self.seen: dict[Inputs, FloatArray] = {}

    def rdp(self, inputs: Inputs) -> FloatArray:
        key = _canonical(inputs)
        if key not in self.seen:
            probs = [0.5 + self.beta * x for x in key]
            self.seen[key] = pbm_coordinate_rdp(
                trials=self.trials, beta=self.beta, other_probs=probs, orders=self.orders
            )
        return self.seen[key]

    def objective(self, inputs: Inputs) -> float:
        return float(np.sum(np.log(np.maximum(self.rdp(inputs), 1e-300))))

    def result(self) -> WorstCase:
        keys = list(self.seen)
        table = np.stack([self.seen[key] for key in keys])  # (combinations, orders)
        winners = np.argmax(table, axis=0)
        return WorstCase(
            orders=tuple(self.orders.tolist()),
            rdp=tuple(float(table[w, i]) for i, w in enumerate(winners)),
            inputs=tuple(keys[w] for w in winners),
            evaluated=len(keys),
        )


def _coordinate_search(
    search: _Search, start: Inputs, levels: list[float], max_sweeps: int
) -> Inputs:
    """Move one party at a time to the level that raises the objective; returns the last best.

    Every combination it tries is recorded in ``search``, which is what the result reads.
    """
    best, score = start, search.objective(start)
    for _ in range(max_sweeps):
        improved = False
        for position in range(len(best)):
            for level in levels:
                moved = tuple(sorted((*best[:position], level, *best[position + 1 :])))
                value = search.objective(moved)
                if value > score + 1e-12 * abs(score):
                    best, score, improved = moved, value, True
        if not improved:
            break
    return best


def _canonical(inputs: Inputs) -> Inputs:
    """One representative of ``x`` and its mirror ``-x``, which give the same maximum."""
    mirrored = tuple(sorted(-x + 0.0 for x in inputs))
    return max(tuple(sorted(inputs)), mirrored)


def _check_parties(parties: int) -> None:
    if isinstance(parties, bool) or not isinstance(parties, int) or parties < 1:
        raise ConfigError(f"parties (M) must be an integer >= 1, got {parties!r}")
