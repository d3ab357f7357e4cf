"""The mechanism: validation, counts, bit widths, and the estimator's mean and exact variance."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.errors import ConfigError, WireError
from vfl.privacy import PbmEvent, PoissonBinomialMechanism
from vfl.privacy.binomial import ChaChaBinomial, CountSampler, TorchBinomial

DRAWS = 40_000

SAMPLERS: dict[str, Callable[[int], CountSampler]] = {
    "chacha": ChaChaBinomial.from_seed,
    "torch": lambda seed: TorchBinomial(torch.Generator().manual_seed(seed)),
}
"""Every count sampler, built from a seed: the mechanism's tests run with each."""
EACH_SAMPLER = pytest.mark.parametrize("kind", sorted(SAMPLERS))


def sum_estimates(
    pbm: PoissonBinomialMechanism, inputs: torch.Tensor, *, draws: int, seed: int, kind: str
) -> torch.Tensor:
    """``draws`` independent estimates of ``inputs.sum()``, each from a fresh privatization."""
    repeated = inputs.to(torch.float64).unsqueeze(1).expand(-1, draws)  # (M, draws)
    counts = pbm.privatize(repeated, sampler=SAMPLERS[kind](seed))
    return pbm.estimate(counts.sum(dim=0), contributors=len(inputs), dtype=torch.float64)


def fourth_central_moment(pbm: PoissonBinomialMechanism, inputs: torch.Tensor) -> float:
    """Exact ``E(ŝ - s)^4``: cumulants of independent binomials add (κ4 = bpq(1 - 6pq))."""
    prob = 0.5 + (pbm.beta / pbm.clip) * inputs.to(torch.float64)
    spread = pbm.trials * prob * (1 - prob)
    kappa4 = float((spread * (1 - 6 * prob * (1 - prob))).sum())
    scale = pbm.clip / (pbm.beta * pbm.trials)
    return scale**4 * (kappa4 + 3 * float(spread.sum()) ** 2)


@st.composite
def settings_and_inputs(draw: st.DrawFn) -> tuple[PoissonBinomialMechanism, torch.Tensor]:
    clip = draw(st.sampled_from([0.5, 1.0, 3.0]))
    pbm = PoissonBinomialMechanism(
        clip=clip,
        trials=draw(st.sampled_from([1, 4, 16, 256])),
        beta=draw(st.sampled_from([0.01, 0.05, 0.15, 0.25])),
    )
    parties = draw(st.integers(1, 6))
    values = draw(st.lists(st.floats(-clip, clip), min_size=parties, max_size=parties))
    return pbm, torch.tensor(values, dtype=torch.float64)


@EACH_SAMPLER
@settings(max_examples=8, deadline=None)
@given(case=settings_and_inputs(), seed=st.integers(0, 2**31))
def test_estimate_is_unbiased_within_five_standard_errors(
    kind: str, case: tuple[PoissonBinomialMechanism, torch.Tensor], seed: int
) -> None:
    # Prepare
    pbm, inputs = case
    std = math.sqrt(float(pbm.estimate_variance(inputs)))

    # Execute
    estimates = sum_estimates(pbm, inputs, draws=DRAWS, seed=seed, kind=kind)

    # Assert
    error = abs(float(estimates.mean()) - float(inputs.sum()))
    assert error <= 5 * std / math.sqrt(DRAWS)


@EACH_SAMPLER
@settings(max_examples=8, deadline=None)
@given(case=settings_and_inputs(), seed=st.integers(0, 2**31))
def test_estimate_variance_matches_the_exact_formula_within_five_standard_errors(
    kind: str, case: tuple[PoissonBinomialMechanism, torch.Tensor], seed: int
) -> None:
    # Prepare
    pbm, inputs = case
    parties, c, b, beta = len(inputs), pbm.clip, pbm.trials, pbm.beta
    exact = c**2 * parties / (4 * beta**2 * b) - float((inputs**2).sum()) / b
    # the exact variance of the unbiased sample variance: (mu4 - sigma^4 (n - 3) / (n - 1)) / n
    spread = fourth_central_moment(pbm, inputs) - exact**2 * (DRAWS - 3) / (DRAWS - 1)
    standard_error = math.sqrt(spread / DRAWS)

    # Execute
    estimates = sum_estimates(pbm, inputs, draws=DRAWS, seed=seed, kind=kind)

    # Assert
    assert float(pbm.estimate_variance(inputs)) == pytest.approx(exact, rel=1e-9)
    assert abs(float(estimates.var()) - exact) <= 5 * standard_error


def test_variance_bound_is_reached_at_zero_and_not_elsewhere() -> None:
    # Prepare
    pbm = PoissonBinomialMechanism(clip=2.0, trials=16, beta=0.1)
    bound = 2.0**2 * 4 / (4 * 0.1**2 * 16)

    # Execute
    at_zero = float(pbm.estimate_variance(torch.zeros(4)))
    at_edge = float(pbm.estimate_variance(torch.tensor([2.0, -2.0, 0.0, 1.0])))

    # Assert
    assert at_zero == pytest.approx(bound)
    assert at_edge == pytest.approx(bound - (4 + 4 + 0 + 1) / 16)


@EACH_SAMPLER
def test_counts_are_int64_in_range_with_the_input_shape(kind: str) -> None:
    # Prepare
    pbm = PoissonBinomialMechanism(clip=1.0, trials=16, beta=0.25)
    embedding = torch.tanh(torch.randn(128, 64, generator=torch.Generator().manual_seed(0)))

    # Execute
    counts = pbm.privatize(embedding, sampler=SAMPLERS[kind](1))

    # Assert
    assert counts.dtype == torch.int64
    assert counts.shape == (128, 64)
    assert int(counts.min()) >= 0 and int(counts.max()) <= 16


@EACH_SAMPLER
def test_counts_follow_the_input_sign(kind: str) -> None:
    # Prepare
    pbm = PoissonBinomialMechanism(clip=1.0, trials=64, beta=0.25)
    inputs = torch.tensor([-1.0, 1.0]).repeat(5000, 1)  # (5000, 2)

    # Execute
    counts = pbm.privatize(inputs, sampler=SAMPLERS[kind](3)).double()

    # Assert: E q = b (1/2 + beta x / C) = 16 and 48, standard error about 0.05
    assert counts[:, 0].mean().item() == pytest.approx(16.0, abs=0.3)
    assert counts[:, 1].mean().item() == pytest.approx(48.0, abs=0.3)


@EACH_SAMPLER
def test_privatize_is_reproducible_from_the_sampler_s_seed_alone(kind: str) -> None:
    # Prepare
    pbm = PoissonBinomialMechanism(clip=1.0, trials=16, beta=0.05)
    inputs = torch.rand(128, 64, generator=torch.Generator().manual_seed(0)) * 2 - 1

    # Execute
    first = pbm.privatize(inputs, sampler=SAMPLERS[kind](7))
    again = pbm.privatize(inputs, sampler=SAMPLERS[kind](7))
    other = pbm.privatize(inputs, sampler=SAMPLERS[kind](8))

    # Assert
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


@EACH_SAMPLER
def test_inputs_beyond_the_clip_bound_are_refused_by_default_and_named(kind: str) -> None:
    # Prepare
    pbm = PoissonBinomialMechanism(clip=1.0, trials=16, beta=0.05)
    inputs = torch.tensor([[0.5, -1.25], [0.0, 1.0]])

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"\|x\| = 1\.25 exceeds the clip bound C = 1\.0"):
        pbm.privatize(inputs, sampler=SAMPLERS[kind](0))
    with pytest.raises(ConfigError, match="NaN or infinite"):
        pbm.privatize(torch.tensor([float("nan")]), sampler=SAMPLERS[kind](0))
    with pytest.raises(ConfigError, match="floating point"):
        pbm.privatize(torch.tensor([1]), sampler=SAMPLERS[kind](0))


@EACH_SAMPLER
def test_clamping_maps_out_of_range_inputs_to_the_extreme_probability(kind: str) -> None:
    # Prepare
    clamped = PoissonBinomialMechanism(clip=1.0, trials=256, beta=0.25, clamp=True)
    inputs = torch.full((4000,), 5.0)

    # Execute
    counts = clamped.privatize(inputs, sampler=SAMPLERS[kind](0)).double()

    # Assert: p = 3/4 (clamped), not 1/2 + 0.25 * 5 (which is not even a probability)
    assert counts.mean().item() == pytest.approx(192.0, abs=0.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"clip": 0.0, "trials": 4, "beta": 0.1}, r"clip \(C\) must be a finite number > 0, got 0"),
        ({"clip": 1.0, "trials": 0, "beta": 0.1}, r"trials \(b\) must be an integer >= 1, got 0"),
        ({"clip": 1.0, "trials": 2.5, "beta": 0.1}, r"integer >= 1, got 2\.5"),
        ({"clip": 1.0, "trials": 4, "beta": 0.0}, r"beta must lie in \(0, 1/4\], got 0\.0"),
        ({"clip": 1.0, "trials": 4, "beta": 0.3}, r"beta must lie in \(0, 1/4\], got 0\.3"),
    ],
)
def test_bad_parameters_are_config_errors_naming_the_value(
    kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        PoissonBinomialMechanism(**kwargs)  # type: ignore[arg-type]


@given(trials=st.integers(1, 10_000), parties=st.integers(1, 64))
def test_bit_widths_match_their_formulas(trials: int, parties: int) -> None:
    # Prepare
    pbm = PoissonBinomialMechanism(clip=1.0, trials=trials, beta=0.1)

    # Execute
    count_bits, sum_bits = pbm.count_bits, pbm.sum_bits(parties)

    # Assert: the smallest widths that hold b and M b
    assert count_bits == math.ceil(math.log2(trials + 1))
    assert sum_bits == math.ceil(math.log2(parties * trials + 1))
    assert 2**count_bits > trials >= 2 ** (count_bits - 1)
    assert 2**sum_bits > parties * trials >= 2 ** (sum_bits - 1)


def test_estimate_decodes_the_extremes_and_the_centre_exactly() -> None:
    # Prepare
    pbm = PoissonBinomialMechanism(clip=2.0, trials=10, beta=0.25)
    sums = torch.tensor([0, 15, 30])

    # Execute
    decoded = pbm.estimate(sums, contributors=3)

    # Assert: (C / (beta b)) (Q - b M / 2) = 0.8 (Q - 15)
    assert decoded.dtype == torch.float32
    assert decoded.tolist() == pytest.approx([-12.0, 0.0, 12.0])


def test_estimate_refuses_sums_that_no_parties_could_produce() -> None:
    # Prepare
    pbm = PoissonBinomialMechanism(clip=1.0, trials=10, beta=0.25)

    # Execute / Assert
    with pytest.raises(WireError, match=r"span \[0, 31\], outside \[0, 30\]"):
        pbm.estimate(torch.tensor([0, 31]), contributors=3)
    with pytest.raises(WireError, match="must be integers"):
        pbm.estimate(torch.tensor([1.0]), contributors=3)
    with pytest.raises(ConfigError, match=r"contributors \(M\) must be an integer >= 1, got 0"):
        pbm.estimate(torch.tensor([1]), contributors=0)


def test_event_describes_one_release() -> None:
    # Prepare
    pbm = PoissonBinomialMechanism(clip=1.0, trials=64, beta=0.15)

    # Execute
    event = pbm.event(parties=4, dimension=32)

    # Assert
    assert event == PbmEvent(trials=64, beta=0.15, parties=4, dimension=32, worst_case=True)
