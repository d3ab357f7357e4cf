"""Accounting math: monotonicity, composition, conversion, and the two cross-checks."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.errors import ConfigError
from vfl.privacy.analysis import (
    DEFAULT_ORDERS,
    compose_rdp,
    expected_uses,
    gaussian_rdp,
    paper_relative_epsilon,
    paper_relative_rdp,
    pbm_rdp,
    rdp_to_epsilon,
)

ORDERS = [1.1, 2.0, 8.0, 32.0]


@settings(max_examples=20, deadline=None)
@given(
    trials=st.integers(1, 40),
    beta=st.floats(0.01, 0.24),
    parties=st.integers(1, 6),
)
def test_worst_case_rdp_rises_with_trials_and_beta_and_falls_with_parties(
    trials: int, beta: float, parties: int
) -> None:
    # Prepare
    def rdp(b: int, bt: float, m: int) -> np.ndarray:
        return pbm_rdp(trials=b, beta=bt, parties=m, orders=ORDERS)

    # Execute
    base = rdp(trials, beta, parties)
    more_trials = rdp(trials + 1, beta, parties)
    more_beta = rdp(trials, min(beta * 1.05, 0.25), parties)
    more_parties = rdp(trials, beta, parties + 1)

    # Assert
    assert np.all(more_trials > base)
    assert np.all(more_beta > base)
    assert np.all(more_parties < base)


def test_typical_case_is_below_the_worst_case() -> None:
    # Execute
    worst = pbm_rdp(trials=16, beta=0.25, parties=4, orders=ORDERS)
    typical = pbm_rdp(trials=16, beta=0.25, parties=4, orders=ORDERS, worst_case=False)

    # Assert
    assert np.all(typical < worst)


def test_gaussian_approximation_approaches_the_exact_value_as_beta_shrinks() -> None:
    # Prepare
    betas = [0.1, 0.05, 0.02, 0.01, 0.005]

    # Execute
    errors = [
        np.max(
            np.abs(
                pbm_rdp(trials=64, beta=beta, parties=4, orders=[2.0, 8.0])
                / gaussian_rdp(trials=64, beta=beta, parties=4, orders=[2.0, 8.0])
                - 1
            )
        )
        for beta in betas
    ]

    # Assert: the relative error shrinks steadily and is tiny at beta = 0.005
    assert all(later < earlier for earlier, later in itertools.pairwise(errors))
    assert errors[-1] < 3e-4


def test_gaussian_formula_value() -> None:
    # Execute
    value = gaussian_rdp(trials=16, beta=0.05, parties=4, orders=[2.0])

    # Assert: 2 alpha b beta^2 / (M (1/4 - beta^2)) = 0.16 / 0.99
    assert float(value[0]) == pytest.approx(0.16 / 0.99)


@given(
    rdp=st.lists(st.floats(0, 100), min_size=4, max_size=4),
    dimension=st.integers(1, 64),
    uses=st.integers(0, 1000),
)
def test_composition_is_linear_in_dimension_and_uses(
    rdp: list[float], dimension: int, uses: int
) -> None:
    # Execute
    total = compose_rdp(per_coordinate=rdp, dimension=dimension, uses=uses)

    # Assert
    assert total == pytest.approx([uses * dimension * r for r in rdp])


def test_zero_uses_give_zero_epsilon() -> None:
    # Prepare
    per_coordinate = pbm_rdp(trials=256, beta=0.25, parties=4, orders=DEFAULT_ORDERS)

    # Execute
    total = compose_rdp(per_coordinate=per_coordinate, dimension=16, uses=0)
    epsilon, _ = rdp_to_epsilon(orders=DEFAULT_ORDERS, rdp=total, delta=1e-5)

    # Assert
    assert epsilon == 0.0


@settings(max_examples=30)
@given(rho=st.floats(1e-3, 10.0), delta=st.sampled_from([1e-3, 1e-5, 1e-8]))
def test_conversion_of_a_linear_curve_matches_its_closed_form(rho: float, delta: float) -> None:
    # Prepare: eps(alpha) = rho alpha; minimising rho alpha + L / (alpha - 1) gives
    # rho + 2 sqrt(rho L) at alpha = 1 + sqrt(L / rho), L = log(1 / delta)
    orders = 1 + np.geomspace(1e-3, 1e4, 20_000)
    log_inv = math.log(1 / delta)

    # Execute
    epsilon, order = rdp_to_epsilon(orders=orders, rdp=rho * orders, delta=delta)

    # Assert
    assert epsilon == pytest.approx(rho + 2 * math.sqrt(rho * log_inv), rel=1e-5)
    assert order == pytest.approx(1 + math.sqrt(log_inv / rho), rel=1e-2)


@given(rdp=st.lists(st.floats(0.001, 1e4), min_size=5, max_size=5))
def test_improved_conversion_is_never_worse_than_mironov(rdp: list[float]) -> None:
    # Prepare
    orders = [1.5, 2.0, 4.0, 16.0, 64.0]

    # Execute
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain, _ = rdp_to_epsilon(orders=orders, rdp=rdp, delta=1e-5)
        improved, _ = rdp_to_epsilon(orders=orders, rdp=rdp, delta=1e-5, conversion="improved")

    # Assert
    assert improved <= plain + 1e-9


def test_optimum_at_the_edge_of_the_grid_warns() -> None:
    with pytest.warns(UserWarning, match=r"optimal Rényi order 1\.5 is at the edge"):
        rdp_to_epsilon(orders=[1.5, 2.0, 4.0], rdp=[1e4, 2e4, 4e4], delta=1e-5)
    with pytest.warns(UserWarning, match=r"optimal Rényi order 4\.0 is at the edge"):
        rdp_to_epsilon(orders=[1.5, 2.0, 4.0], rdp=[1e-4, 2e-4, 4e-4], delta=1e-5)


@settings(max_examples=20, deadline=None)
@given(trials=st.integers(1, 64), beta=st.floats(0.01, 0.25), parties=st.integers(1, 5))
def test_order_infinity_is_the_pure_dp_epsilon_whatever_the_others_hold(
    trials: int, beta: float, parties: int
) -> None:
    # Prepare
    pure = trials * math.log((1 + 2 * beta) / (1 - 2 * beta))

    # Execute
    worst = pbm_rdp(trials=trials, beta=beta, parties=parties, orders=[math.inf])
    typical = pbm_rdp(
        trials=trials, beta=beta, parties=parties, orders=[math.inf], worst_case=False
    )

    # Assert
    assert float(worst[0]) == pytest.approx(pure, rel=1e-9)
    assert float(typical[0]) == pytest.approx(pure, rel=1e-9)


def test_a_single_gentle_release_is_bounded_by_pure_dp_without_a_warning() -> None:
    # Prepare
    per_coordinate = pbm_rdp(trials=2, beta=0.01, parties=4, orders=DEFAULT_ORDERS)
    total = compose_rdp(per_coordinate=per_coordinate, dimension=1, uses=1)

    # Execute
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        epsilon, order = rdp_to_epsilon(orders=DEFAULT_ORDERS, rdp=total, delta=1e-5)

    # Assert
    assert order == math.inf
    assert epsilon == pytest.approx(2 * math.log(1.02 / 0.98), rel=1e-9)


def test_infinite_rdp_gives_infinite_epsilon() -> None:
    epsilon, _ = rdp_to_epsilon(orders=[2.0, 4.0], rdp=[math.inf, math.inf], delta=1e-5)
    assert epsilon == math.inf


def test_worked_example_of_the_spec() -> None:
    # Prepare: CIFAR-10 setting M=4, b=16, beta=0.05, 600 epochs, P=1 (spec: about 96)
    per_coordinate = pbm_rdp(trials=16, beta=0.05, parties=4, orders=DEFAULT_ORDERS)

    # Execute
    total = compose_rdp(per_coordinate=per_coordinate, dimension=1, uses=600)
    epsilon, order = rdp_to_epsilon(orders=DEFAULT_ORDERS, rdp=total, delta=1e-5)

    # Assert
    assert epsilon == pytest.approx(96.2, abs=0.1)
    assert 1.3 < order < 1.6


def test_paper_relative_figures_follow_the_big_o_rate() -> None:
    # Execute
    rdp = paper_relative_rdp(trials=16, beta=0.05, parties=4, uses=600, order=2.0)
    epsilon = paper_relative_epsilon(trials=16, beta=0.05, parties=4, uses=600, delta=1e-5)

    # Assert: K b beta^2 alpha / M and sqrt(K b beta^2 / M log(1/delta))
    assert rdp == pytest.approx(600 * 16 * 0.0025 * 2 / 4)
    assert epsilon == pytest.approx(math.sqrt(600 * 16 * 0.0025 / 4 * math.log(1e5)))


def test_expected_uses_is_the_papers_t_b_over_n() -> None:
    assert expected_uses(rounds=300_000, batch_size=100, num_samples=50_000) == 600.0
    with pytest.raises(ConfigError, match="batch_size 10 exceeds num_samples 5"):
        expected_uses(rounds=1, batch_size=10, num_samples=5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"delta": 0.0}, r"delta must lie in \(0, 1\), got 0\.0"),
        ({"delta": 1.5}, r"delta must lie in \(0, 1\), got 1\.5"),
        ({"rdp": [1.0]}, r"rdp has shape \(1,\), orders \(2,\)"),
        ({"rdp": [-1.0, 1.0]}, "must be >= 0"),
        ({"orders": [0.5, 2.0]}, r"must be > 1 \(inf allowed\), got 0\.5"),
        ({"conversion": "tight"}, "conversion must be 'mironov' or 'improved', got 'tight'"),
    ],
)
def test_bad_conversion_arguments_are_config_errors(
    kwargs: dict[str, object], message: str
) -> None:
    # Prepare
    arguments: dict[str, object] = {"orders": [2.0, 4.0], "rdp": [1.0, 2.0], "delta": 1e-5}
    arguments.update(kwargs)

    # Execute / Assert
    with pytest.raises(ConfigError, match=message):
        rdp_to_epsilon(**arguments)  # type: ignore[arg-type]
