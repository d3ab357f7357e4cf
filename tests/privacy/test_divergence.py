"""Log-space primitives and the exact coordinate divergence, against direct computations."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.errors import ConfigError
from vfl.privacy import divergence
from vfl.privacy.divergence import (
    MAX_TRIALS,
    check_mechanism,
    log_binomial_pmf,
    log_convolve,
    log_sum_exp,
    pbm_coordinate_rdp,
    renyi_divergence,
)


def exact_rdp(trials: int, beta: Fraction, others: list[Fraction], order: int) -> float:
    """D_order(P+ || P-) in exact rational arithmetic (slow; tiny cases only)."""

    def binomial(n: int, p: Fraction) -> list[Fraction]:
        return [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]

    def convolve(a: list[Fraction], b: list[Fraction]) -> list[Fraction]:
        out = [Fraction(0)] * (len(a) + len(b) - 1)
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                out[i + j] += x * y
        return out

    law = [Fraction(1)]
    for p in others:
        law = convolve(law, binomial(trials, p))
    high = convolve(law, binomial(trials, Fraction(1, 2) + beta))
    low = convolve(law, binomial(trials, Fraction(1, 2) - beta))
    total = sum(p**order * q ** (1 - order) for p, q in zip(high, low, strict=True))
    return (math.log(total.numerator) - math.log(total.denominator)) / (order - 1)


@given(values=st.lists(st.floats(-800, 50), min_size=1, max_size=30))
def test_log_sum_exp_matches_a_shifted_direct_sum(values: list[float]) -> None:
    # Prepare
    shift = max(values)
    direct = shift + math.log(sum(math.exp(v - shift) for v in values))

    # Execute
    result = float(log_sum_exp(values))

    # Assert
    assert result == pytest.approx(direct, rel=1e-12, abs=1e-12)


def test_log_sum_exp_of_nothing_but_zero_probabilities_is_minus_infinity() -> None:
    assert log_sum_exp([[-np.inf, -np.inf], [0.0, -np.inf]], axis=1).tolist() == [-np.inf, 0.0]


@given(trials=st.integers(0, 60), prob=st.floats(0.01, 0.99))
def test_binomial_log_pmf_matches_the_closed_form(trials: int, prob: float) -> None:
    # Prepare
    direct = [
        math.comb(trials, k) * prob**k * (1 - prob) ** (trials - k) for k in range(trials + 1)
    ]

    # Execute
    pmf = np.exp(log_binomial_pmf(trials=trials, prob=prob))

    # Assert
    assert pmf == pytest.approx(direct, rel=1e-9, abs=1e-300)
    assert pmf.sum() == pytest.approx(1.0, rel=1e-12)


@given(
    first=st.lists(st.floats(0.001, 1.0), min_size=1, max_size=12),
    second=st.lists(st.floats(0.001, 1.0), min_size=1, max_size=12),
)
def test_log_convolve_matches_linear_convolution(first: list[float], second: list[float]) -> None:
    # Prepare
    direct = np.convolve(first, second)

    # Execute
    result = np.exp(log_convolve(np.log(first), np.log(second)))

    # Assert
    assert result == pytest.approx(direct, rel=1e-12)


@given(
    first=st.lists(st.floats(0.001, 1.0), min_size=1, max_size=40),
    second=st.lists(st.floats(0.001, 1.0), min_size=1, max_size=12),
    block=st.integers(1, 64),
)
def test_log_convolve_in_blocks_equals_it_in_one_piece(
    first: list[float], second: list[float], block: int
) -> None:
    # Prepare: the same convolution with blocks of any size, down to one output per block
    whole = log_convolve(np.log(first), np.log(second))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(divergence, "CONVOLVE_BLOCK", block)

        # Execute
        blocked = log_convolve(np.log(first), np.log(second))

    # Assert: bit for bit (every output is its own log-sum-exp)
    assert np.array_equal(blocked, whole)


def test_trials_beyond_what_vfl_accounts_for_are_refused_by_name() -> None:
    # Prepare: the largest b accounted for passes (control), the next is refused
    check_mechanism(MAX_TRIALS, 0.05)

    # Execute / Assert: before any table is allocated (b = 1e11 needed 128 GiB)
    with pytest.raises(ConfigError, match=r"trials \(b\) = 100000000000 .* use b <= 4096"):
        pbm_coordinate_rdp(trials=10**11, beta=0.05, other_probs=[0.5] * 3, orders=[2.0])


def test_log_convolve_keeps_tails_far_below_the_smallest_double() -> None:
    # Prepare: two laws whose products reach e^-3000, where a global rescaling underflows
    law = log_binomial_pmf(trials=1024, prob=0.25)

    # Execute
    result = log_convolve(law, law)

    # Assert: the sum of two Binomial(1024, 1/4) is Binomial(2048, 1/4), tails included
    assert result == pytest.approx(log_binomial_pmf(trials=2048, prob=0.25), rel=1e-10)
    assert result[-1] < -2800


def test_renyi_divergence_of_identical_laws_is_zero_and_d2_is_log_one_plus_chi_square() -> None:
    # Prepare
    p = np.array([0.2, 0.5, 0.3])
    q = np.array([0.4, 0.4, 0.2])
    chi_square = float(np.sum((p - q) ** 2 / q))

    # Execute
    same = renyi_divergence(log_p=np.log(p), log_q=np.log(p), orders=[1.5, 2.0, 64.0])
    d2 = renyi_divergence(log_p=np.log(p), log_q=np.log(q), orders=[2.0])

    # Assert
    assert same == pytest.approx([0.0, 0.0, 0.0], abs=1e-14)
    assert float(d2[0]) == pytest.approx(math.log1p(chi_square), rel=1e-12)


def test_renyi_divergence_near_order_one_approaches_kl() -> None:
    # Prepare
    p = np.exp(log_binomial_pmf(trials=20, prob=0.6))
    q = np.exp(log_binomial_pmf(trials=20, prob=0.4))
    kl = float(np.sum(p * np.log(p / q)))

    # Execute
    near_one = renyi_divergence(log_p=np.log(p), log_q=np.log(q), orders=[1.0001])

    # Assert
    assert float(near_one[0]) == pytest.approx(kl, rel=1e-3)


def test_divergence_is_infinite_where_q_misses_mass_of_p() -> None:
    # Execute
    result = renyi_divergence(
        log_p=np.log([0.5, 0.5]), log_q=np.array([0.0, -np.inf]), orders=[2.0]
    )

    # Assert
    assert result.tolist() == [np.inf]


def test_coordinate_rdp_golden_value_with_the_others_at_zero() -> None:
    # Execute: M=4, b=16, beta=0.05, alpha=2, the three other parties' inputs at 0
    rdp = pbm_coordinate_rdp(trials=16, beta=0.05, other_probs=[0.5] * 3, orders=[2.0])

    # Assert: the acceptance value 0.160 +- 1%
    assert float(rdp[0]) == pytest.approx(0.160, rel=0.01)


@pytest.mark.parametrize(
    ("trials", "beta", "others", "order"),
    [
        (16, Fraction(1, 20), [Fraction(1, 2)] * 3, 2),
        (16, Fraction(1, 4), [Fraction(3, 4)] * 3, 8),
        (4, Fraction(3, 20), [Fraction(7, 20), Fraction(1, 2), Fraction(13, 20)], 5),
    ],
)
def test_coordinate_rdp_equals_exact_rational_arithmetic(
    trials: int, beta: Fraction, others: list[Fraction], order: int
) -> None:
    # Prepare
    expected = exact_rdp(trials, beta, others, order)

    # Execute
    rdp = pbm_coordinate_rdp(
        trials=trials, beta=float(beta), other_probs=[float(p) for p in others], orders=[order]
    )

    # Assert: the larger of the two directions (beta -> -beta swaps them)
    assert float(rdp[0]) == pytest.approx(
        max(expected, exact_rdp(trials, -beta, others, order)), rel=1e-10
    )


@settings(max_examples=10, deadline=None)
@given(parties=st.integers(1, 16), order=st.sampled_from([1.0001, 2.0, 64.0, 256.0]))
def test_no_overflow_or_underflow_at_large_trials_and_orders(parties: int, order: float) -> None:
    # Execute
    extreme = pbm_coordinate_rdp(
        trials=256, beta=0.25, other_probs=[0.75] * (parties - 1), orders=[order]
    )
    gentle = pbm_coordinate_rdp(
        trials=256, beta=0.001, other_probs=[0.5] * (parties - 1), orders=[order]
    )

    # Assert
    assert np.all(np.isfinite(extreme)) and np.all(extreme > 0)
    assert np.all(np.isfinite(gentle)) and np.all(gentle > 0)


def test_other_probabilities_outside_the_reachable_range_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"0\.8 lies outside \[0\.45, 0\.55"):
        pbm_coordinate_rdp(trials=4, beta=0.05, other_probs=[0.8], orders=[2.0])
    with pytest.raises(ConfigError, match=r"orders must be > 1 \(inf allowed\), got 1\.0"):
        pbm_coordinate_rdp(trials=4, beta=0.05, other_probs=[], orders=[1.0])
