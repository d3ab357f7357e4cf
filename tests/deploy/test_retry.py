"""Backoff with jitter and the retry policy's bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.errors import ConfigError
from vfl.transport.retry import RetryPolicy


@given(
    retry=st.integers(1, 80),
    backoff=st.floats(0.01, 5),
    cap=st.floats(5, 60),
    jitter=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_delays_grow_exponentially_up_to_the_cap_and_jitter_only_shortens_them(
    retry: int, backoff: float, cap: float, jitter: float, seed: int
) -> None:
    # Prepare
    policy = RetryPolicy(backoff_s=backoff, max_backoff_s=cap, jitter=jitter)
    ceiling = min(cap, backoff * 2.0 ** (retry - 1))

    # Execute
    delay = policy.delay(retry, rng=np.random.default_rng(seed))

    # Assert
    assert (1 - jitter) * ceiling - 1e-12 <= delay <= ceiling


def test_jitter_spreads_the_delays_of_many_peers() -> None:
    # Prepare
    policy = RetryPolicy(backoff_s=1.0, jitter=0.5)
    rng = np.random.default_rng(0)

    # Execute
    delays = [policy.delay(1, rng=rng) for _ in range(200)]

    # Assert
    assert 0.5 <= min(delays) < 0.55 and 0.95 < max(delays) <= 1.0


def test_max_wait_adds_every_attempt_and_the_backoffs_between_them() -> None:
    policy = RetryPolicy(attempts=3, timeout_s=10, backoff_s=1, max_backoff_s=1.5)
    assert policy.max_wait_s == pytest.approx(30 + 1 + 1.5)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"attempts": 0}, "attempts must be >= 1, got 0"),
        ({"timeout_s": 0}, "timeout_s must be > 0"),
        ({"backoff_s": 5, "max_backoff_s": 1}, "backoff_s <= max_backoff_s"),
        ({"jitter": 1.5}, "jitter must lie in"),
    ],
)
def test_invalid_policies_are_refused_with_the_value(
    options: dict[str, float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        RetryPolicy(**options)  # type: ignore[arg-type]
