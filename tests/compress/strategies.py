"""Hypothesis strategies shared by the compressor tests."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


@st.composite
def tensors(
    draw: st.DrawFn, *, low: float = -10.0, high: float = 10.0, max_side: int = 12
) -> torch.Tensor:
    """A float32 tensor of shape (B, P) or (N,) with values in [low, high]."""
    shape = draw(
        st.one_of(
            st.tuples(st.integers(1, max_side), st.integers(1, max_side)),
            st.tuples(st.integers(1, max_side * max_side)),
        )
    )
    values = draw(
        hnp.arrays(
            np.float32,
            shape,
            elements=st.floats(low, high, width=32, allow_nan=False, allow_infinity=False),
        )
    )
    return torch.from_numpy(values)


@st.composite
def patterns(draw: st.DrawFn, *, low: float, high: float, size: int = 16) -> np.ndarray:
    """A short pattern of values in [low, high] (tiled by the caller into a large input)."""
    return draw(
        hnp.arrays(
            np.float64,
            size,
            elements=st.floats(low, high, allow_nan=False, allow_infinity=False),
        )
    )
