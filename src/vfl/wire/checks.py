"""Cheap validation of tensors that arrive in messages (on the hot path of every round)."""

from __future__ import annotations

import numpy as np
import torch

_NUMPY_FLOATS = (torch.float32, torch.float64, torch.float16)


def all_finite(tensor: torch.Tensor) -> bool:
    """Whether every entry is finite (numpy's check is several times faster on small tensors)."""
    if tensor.dtype in _NUMPY_FLOATS and tensor.device.type == "cpu":
        return bool(np.isfinite(tensor.detach().numpy()).all())
    return bool(torch.isfinite(tensor).all())


def id_bounds(ids: torch.Tensor) -> tuple[int, int]:
    """Smallest and largest entry of a non-empty int64 id tensor."""
    values = ids.numpy()
    return int(values.min()), int(values.max())
