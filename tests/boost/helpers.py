"""Small synthetic vertical tables and one short test key for the SecureBoost tests.

Keys here are 512 bits, far below the 2048 bits vfl requires in use: they are made with
``insecure_test_key=True``, the flag that exists only so that tests run in seconds.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from vfl.boost.paillier import KeyPair

TEST_KEY_BITS = 512


@cache
def short_keys() -> KeyPair:
    """One short key pair shared by the tests of a session (insecure on purpose)."""
    return KeyPair.generate(TEST_KEY_BITS, insecure_test_key=True)


def vertical_table(
    rows: int,
    widths: tuple[int, ...],
    *,
    seed: int,
    distinct: int = 6,
    missing: float = 0.0,
    regression: bool = False,
) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """Labels and column blocks by party (1, 2, ...) of a table with few distinct values."""
    rng = np.random.default_rng(seed)
    features = rng.integers(0, distinct, size=(rows, sum(widths))).astype(np.float64)
    signal = features @ rng.normal(size=sum(widths)) + rng.normal(scale=0.5, size=rows)
    if missing:
        features[rng.random(features.shape) < missing] = np.nan
    labels = signal if regression else (signal > np.median(signal)).astype(np.float64)
    edges = np.cumsum((0, *widths))
    blocks = {p + 1: features[:, edges[p] : edges[p + 1]] for p in range(len(widths))}
    return labels, blocks
