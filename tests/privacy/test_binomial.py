"""The PBM's count samplers: one contract for both, exactness of the bit-sliced one."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.secagg.stats import chi_square_critical
from vfl import jit
from vfl.errors import ConfigError
from vfl.privacy import binomial, binomial_kernels
from vfl.privacy.binomial import ChaChaBinomial, CountSampler, TorchBinomial
from vfl.privacy.randomness import count_sampler

SAMPLERS: dict[str, Callable[[int], CountSampler]] = {
    "chacha": ChaChaBinomial.from_seed,
    # Another key than "chacha"'s for the same seed, so that its statistics are other draws.
    "chacha-numpy": lambda seed: ChaChaBinomial(
        ChaChaBinomial.from_seed(seed + 10**6).key, compiled=False
    ),
    "torch": lambda seed: TorchBinomial(torch.Generator().manual_seed(seed)),
}
EACH_SAMPLER = pytest.mark.parametrize("kind", sorted(SAMPLERS))
COMPILED = pytest.mark.skipif(
    not binomial_kernels.available(), reason="numba (the `fast` extra) is not installed"
)

PROBABILITIES = st.floats(2.0**-11, 1.0, exclude_max=True)


def pearson_statistic(counts: np.ndarray, trials: int, p: float) -> tuple[float, int]:
    """Pearson's statistic of ``counts`` against the Binomial(trials, p) pmf, and its df.

    Values whose expected frequency is below 5 are pooled into the nearest bin that reaches it.
    """
    pmf = np.array(
        [math.comb(trials, k) * p**k * (1 - p) ** (trials - k) for k in range(trials + 1)]
    )
    expected = pmf * len(counts)
    observed = np.bincount(counts, minlength=trials + 1).astype(np.float64)
    bins: list[tuple[float, float]] = []
    held_e = held_o = 0.0
    for e, o in zip(expected, observed, strict=True):
        held_e, held_o = held_e + e, held_o + o
        if held_e >= 5:
            bins.append((held_e, held_o))
            held_e = held_o = 0.0
    if held_e:
        last_e, last_o = bins.pop()
        bins.append((last_e + held_e, last_o + held_o))
    statistic = sum((o - e) ** 2 / e for e, o in bins)
    return statistic, len(bins) - 1


# The contract every sampler keeps.


@EACH_SAMPLER
@settings(max_examples=20, deadline=None)
@given(
    trials=st.integers(1, 300),
    prob=hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=9), elements=PROBABILITIES),
)
def test_counts_are_int64_in_range_with_the_shape_of_the_probabilities(
    kind: str, trials: int, prob: np.ndarray
) -> None:
    # Prepare
    sampler = SAMPLERS[kind](0)

    # Execute
    counts = sampler.binomial(trials, prob)

    # Assert
    assert counts.dtype == np.int64 and counts.shape == prob.shape
    assert ((counts >= 0) & (counts <= trials)).all()


@EACH_SAMPLER
def test_a_resumed_sampler_draws_what_an_uninterrupted_one_draws(kind: str) -> None:
    # Prepare
    prob = np.linspace(0.25, 0.75, 300)
    uninterrupted, interrupted = SAMPLERS[kind](5), SAMPLERS[kind](5)
    interrupted.binomial(64, prob)
    saved = interrupted.state_dict()
    resumed = SAMPLERS[kind](99)

    # Execute
    resumed.load_state_dict(saved)
    uninterrupted.binomial(64, prob)

    # Assert
    assert np.array_equal(resumed.binomial(64, prob), uninterrupted.binomial(64, prob))


@EACH_SAMPLER
def test_the_same_seed_repeats_the_draws_and_another_does_not(kind: str) -> None:
    # Prepare
    prob = np.full(2000, 0.5)

    # Execute
    first, again, other = (SAMPLERS[kind](s).binomial(16, prob) for s in (7, 7, 8))

    # Assert
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


@EACH_SAMPLER
@pytest.mark.parametrize(
    ("trials", "p"), [(4, 0.25), (16, 0.5), (64, 0.3), (64, 0.75), (65, 0.6), (200, 0.4)]
)
def test_counts_follow_the_binomial_pmf(kind: str, trials: int, p: float) -> None:
    # Prepare
    sampler = SAMPLERS[kind](trials)

    # Execute
    counts = sampler.binomial(trials, np.full(50_000, p))

    # Assert: Pearson's chi-square against the exact pmf, at significance 1e-3
    statistic, df = pearson_statistic(counts, trials, p)
    assert statistic < chi_square_critical(df), f"chi2 = {statistic:.1f} with {df} df"


def test_the_chi_square_check_rejects_a_slightly_wrong_probability() -> None:
    # Prepare: the negative control of the pmf test: p = 0.51 drawn, 0.5 claimed
    counts = ChaChaBinomial.from_seed(1).binomial(64, np.full(50_000, 0.51))

    # Execute
    statistic, df = pearson_statistic(counts, 64, 0.5)

    # Assert
    assert statistic > chi_square_critical(df)


# The bit-sliced sampler.


@settings(max_examples=200, deadline=None)
@given(p=PROBABILITIES)
def test_thresholds_are_exactly_p_times_two_to_the_64(p: float) -> None:
    # Execute
    threshold = binomial._thresholds(np.array([p]))

    # Assert
    assert int(threshold[0]) == Fraction(p) * 2**64


@COMPILED
@settings(max_examples=40, deadline=None)
@given(
    trials=st.integers(1, 200),
    prob=hnp.arrays(np.float64, st.integers(0, 600), elements=PROBABILITIES),
    seed=st.integers(0, 2**31),
)
def test_the_compiled_loop_draws_what_the_numpy_reference_draws(
    trials: int, prob: np.ndarray, seed: int
) -> None:
    # Prepare
    key = ChaChaBinomial.from_seed(seed).key

    # Execute
    compiled = ChaChaBinomial(key, compiled=True).binomial(trials, prob)
    reference = ChaChaBinomial(key, compiled=False).binomial(trials, prob)

    # Assert
    assert np.array_equal(compiled, reference)


@pytest.mark.parametrize("compiled", [pytest.param(True, marks=COMPILED), False])
def test_fetching_words_as_the_draw_goes_reads_the_same_stream(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: a draw that starts with a whole stream for its levels, and one with one word per
    # coordinate, which must fetch more at almost every level
    prob = np.random.default_rng(0).uniform(0.25, 0.75, 1000)
    key = ChaChaBinomial.from_seed(3).key
    whole = ChaChaBinomial(key, compiled=compiled).binomial(100, prob)

    # Execute
    monkeypatch.setattr(binomial, "FIRST_WORDS_PER_COORDINATE", 1)
    piecemeal = ChaChaBinomial(key, compiled=compiled).binomial(100, prob)

    # Assert
    assert np.array_equal(whole, piecemeal)


def test_the_extreme_probabilities_give_the_extreme_counts_almost_always() -> None:
    # Prepare
    sampler = ChaChaBinomial.from_seed(0)
    below_one = np.nextafter(1.0, 0.0)

    # Execute
    high = sampler.binomial(64, np.full(1000, below_one))
    low = sampler.binomial(64, np.full(1000, 2.0**-11))

    # Assert: P(a failure among 64 trials at 1 - 2^-53) and P(more than 2 successes at 2^-11)
    # are both below 1e-5 per coordinate
    assert (high == 64).all()
    assert (low <= 2).all()


def test_each_draw_reads_a_fresh_stream() -> None:
    # Prepare
    sampler = ChaChaBinomial.from_seed(0)
    prob = np.full(1000, 0.5)

    # Execute
    first, second = sampler.binomial(16, prob), sampler.binomial(16, prob)

    # Assert
    assert sampler.draws == 2
    assert not np.array_equal(first, second)


@pytest.mark.parametrize(
    ("trials", "prob", "message"),
    [
        (0, np.full(2, 0.5), "trials must be an integer >= 1, got 0"),
        (True, np.full(2, 0.5), "trials must be an integer >= 1, got True"),
        (4, np.array([0.5, 1.0]), r"probability 1\.0 is outside \[2\^-11, 1\)"),
        (4, np.array([0.5, 1e-4]), r"probability 0\.0001 is outside"),
        (4, np.array([np.nan]), "probability nan is outside"),
        (4, np.full(2, 0.5, dtype=np.float32), "probabilities must be float64, got float32"),
    ],
)
def test_bad_arguments_are_refused_and_named(trials: int, prob: np.ndarray, message: str) -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match=message):
        ChaChaBinomial.from_seed(0).binomial(trials, prob)


def test_a_key_of_the_wrong_length_is_refused() -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match="a ChaCha20 key has 32 bytes, got 16"):
        ChaChaBinomial(bytes(16))


def test_a_checkpoint_of_the_other_sampler_is_refused_with_the_setting_to_use() -> None:
    # Prepare
    chacha, torch_sampler = ChaChaBinomial.from_seed(0), SAMPLERS["torch"](0)

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"privacy\.sampler = 'torch'"):
        chacha.load_state_dict(torch_sampler.state_dict())
    with pytest.raises(ConfigError, match=r"privacy\.sampler = 'chacha'"):
        torch_sampler.load_state_dict(chacha.state_dict())


def test_the_torch_sampler_draws_what_torch_binomial_draws() -> None:
    # Prepare: the draws of runs made before the ChaCha20 sampler, repeated exactly
    prob = torch.rand(64, 32, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    before = torch.binomial(
        torch.full_like(prob, 16.0), prob, generator=torch.Generator().manual_seed(4)
    ).to(torch.int64)

    # Execute
    counts = TorchBinomial(torch.Generator().manual_seed(4)).binomial(16, prob.numpy())

    # Assert
    assert np.array_equal(counts, before.numpy())


def test_os_keys_differ_between_samplers_and_from_the_seeded_key() -> None:
    # Execute
    first, second = (count_sampler("chacha", 0, secure_rng=True) for _ in range(2))

    # Assert
    assert isinstance(first, ChaChaBinomial) and isinstance(second, ChaChaBinomial)
    assert len({first.key, second.key, ChaChaBinomial.from_seed(0).key}) == 3


def test_an_unknown_sampler_is_refused_and_the_valid_ones_named() -> None:
    # Execute / Assert
    with pytest.raises(ValueError, match="unknown PBM sampler 'mt'; valid: chacha, torch"):
        count_sampler("mt", 0, secure_rng=False)


def trial_by_trial(
    thresholds: list[int], trials: list[int], words: list[int], ends: list[int] | None = None
) -> tuple[list[int], int, int]:
    """Successes per coordinate, each trial decided on its own: the first bit where its uniform
    and ``T`` differ decides it (uniform bit 0 under a 1: success), a tie in all 64 bits fails.
    Also the words read and how many coordinates still had a trial open after level 0; ``ends``
    collects the words read by the end of each level that read any.

    Bits as the sampler defines them: at each level, every coordinate with ``N`` undecided
    trials, in coordinate order, takes the next ``ceil(N / 64)`` words, and bit ``r`` of them
    (word by word, bit 0 first) is the next bit of its ``r``-th undecided trial.
    """
    open_trials = [list(range(n)) for n in trials]
    successes = [0] * len(thresholds)
    read = 0
    for level in range(63, -1, -1):
        for coordinate, threshold in enumerate(thresholds):
            undecided = open_trials[coordinate]
            if not undecided:
                continue
            drawn = 0
            for index in range(-(-len(undecided) // 64)):
                drawn |= words[read] << (64 * index)
                read += 1
            bit, staying = threshold >> level & 1, []
            for rank, trial in enumerate(undecided):
                own = drawn >> rank & 1
                if own == bit:
                    staying.append(trial)
                else:
                    successes[coordinate] += own < bit
            open_trials[coordinate] = staying
        if ends is not None and (not ends or ends[-1] != read):
            ends.append(read)
    return successes, read, sum(1 for t in open_trials if t)


TIED, FREE = 0, 1


@st.composite
def coordinates_and_words(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    """Thresholds, trials per coordinate (often past one or two words), and a stream long enough
    for every level. Words are often the threshold's bit at their level in every position, so
    that trials tie for many levels (some in all 64), or all zeros or all ones."""
    count = draw(st.integers(1, 4))
    thresholds = draw(st.lists(st.integers(0, 2**64 - 1), min_size=count, max_size=count))
    sizes = st.one_of(st.integers(1, 200), st.sampled_from([63, 64, 65, 128, 129, 200]))
    trials = draw(st.lists(sizes, min_size=count, max_size=count))
    tie_depth = draw(st.integers(0, 64))
    words: list[int] = []
    for level in range(63, -1, -1):
        for threshold in thresholds:
            tied = 63 - level < tie_depth
            repeated = 2**64 - 1 if threshold >> level & 1 else 0
            word = st.one_of(st.just(0), st.just(2**64 - 1), st.integers(0, 2**64 - 1))
            for _ in range(4):  # at most 4 words (256 trials) per coordinate and level
                words.append(repeated if tied else draw(word))
    return thresholds, trials, words


def run_levels(
    compiled: bool, thresholds: list[int], trials: list[int], words: list[int]
) -> tuple[np.ndarray, int, int, int]:
    """The level loop over fresh coordinates: successes, words used, next level, still open."""
    undecided = np.array(trials, dtype=np.int64)
    successes = np.zeros(len(trials), dtype=np.int64)
    arrays = (np.array(thresholds, dtype=np.uint64), np.arange(len(trials), dtype=np.int64))
    stream = np.array(words, dtype=np.uint64)
    if compiled:
        left, used, level = binomial_kernels.compiled()(
            *arrays, len(trials), undecided, successes, stream, 63
        )
    else:
        still, used, level = binomial_kernels.reference_levels(
            *arrays, undecided, successes, stream, 63
        )
        left = len(still)
    return successes, used, level, left


EACH_LOOP = pytest.mark.parametrize("compiled", [pytest.param(True, marks=COMPILED), False])


@EACH_LOOP
@settings(max_examples=150, deadline=None)
@given(case=coordinates_and_words())
def test_each_trial_succeeds_exactly_when_its_uniform_is_below_the_threshold(
    compiled: bool, case: tuple[list[int], list[int], list[int]]
) -> None:
    # Prepare
    thresholds, trials, words = case

    # Execute
    successes, used, level, left = run_levels(compiled, thresholds, trials, words)

    # Assert: the same counts from the same words, and the same trials left tied
    expected, read, tied = trial_by_trial(thresholds, trials, words)
    assert successes.tolist() == expected
    assert used == read
    assert (level, left) == ((-1, tied) if tied else (level, 0))


@EACH_LOOP
@settings(max_examples=60, deadline=None)
@given(case=coordinates_and_words(), cut=st.integers(0, 4 * 64))
def test_a_stream_that_runs_out_stops_after_the_last_level_it_can_finish(
    compiled: bool, case: tuple[list[int], list[int], list[int]], cut: int
) -> None:
    # Prepare: only the first ``cut`` words are there
    thresholds, trials, words = case
    ends: list[int] = []
    trial_by_trial(thresholds, trials, words, ends)

    # Execute
    _, used, level, left = run_levels(compiled, thresholds, trials, words[:cut])

    # Assert: the loop read whole levels only, every one that fits
    finished = [end for end in ends if end <= cut]
    assert used == (finished[-1] if finished else 0)
    if len(finished) < len(ends):
        assert left > 0 and level == 63 - len(finished)


@EACH_LOOP
@pytest.mark.parametrize("trials", [64, 65, 200])
def test_a_uniform_that_ties_with_the_threshold_in_every_bit_fails(
    compiled: bool, trials: int
) -> None:
    # Prepare: every word repeats the threshold's bit in all its bits, level after level
    threshold = int(Fraction(0.7) * 2**64)
    per_level = -(-trials // 64)
    words = [
        2**64 - 1 if threshold >> level & 1 else 0
        for level in range(63, -1, -1)
        for _ in range(per_level)
    ]

    # Execute
    successes, used, level, left = run_levels(compiled, [threshold], [trials], words)

    # Assert: all 64 levels read, no trial decided, none counted as a success
    assert (used, level, left) == (64 * per_level, -1, 1)
    assert int(successes[0]) == 0
    assert trial_by_trial([threshold], [trials], words) == ([0], 64 * per_level, 1)


def test_numba_that_does_not_import_falls_back_to_numpy_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: numba found but broken (built for another numpy, say)
    import builtins

    real_import = builtins.__import__

    def broken(name: str, *args: object, **kwargs: object) -> object:
        if name == "numba":
            raise RuntimeError("numba built against another numpy")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", broken)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    jit.usable.cache_clear()
    prob = np.random.default_rng(0).uniform(0.25, 0.75, 300)

    # Execute
    try:
        usable = jit.usable()
        counts = ChaChaBinomial.from_seed(4).binomial(64, prob)
    finally:
        monkeypatch.undo()
        jit.usable.cache_clear()

    # Assert
    assert usable is False
    assert "numba is installed but does not import" in caplog.text
    reference = ChaChaBinomial(ChaChaBinomial.from_seed(4).key, compiled=False).binomial(64, prob)
    assert np.array_equal(counts, reference)


def test_an_os_keyed_sampler_never_saves_its_key_and_restores_under_a_fresh_one() -> None:
    # Prepare
    prob = np.full(2000, 0.5)
    sampler = ChaChaBinomial.from_os()
    sampler.binomial(16, prob)
    state = sampler.state_dict()
    restored = ChaChaBinomial.from_os()
    first_key = restored.key

    # Execute
    restored.load_state_dict(state)

    # Assert
    assert "key" not in state and state["draws"] == 1
    assert restored.key not in (first_key, sampler.key) and restored.draws == 0


def test_a_seeded_sampler_refuses_the_state_of_an_os_keyed_one() -> None:
    # Prepare
    state = ChaChaBinomial.from_os().state_dict()

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"resume it with privacy\.randomness = 'os'"):
        ChaChaBinomial.from_seed(0).load_state_dict(state)
