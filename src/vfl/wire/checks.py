"""Cheap validation of tensors that arrive in messages (on the hot path of every round).

Messages arrive on the host: a check there costs no wait for an accelerator. A check of a tensor
on an accelerator must read its answer back, which waits for every operation queued before it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch

_NUMPY_FLOATS = (torch.float32, torch.float64, torch.float16)


def all_finite(tensor: torch.Tensor) -> bool:
    """Whether every entry is finite (numpy's check is several times faster on small tensors).

    On an accelerator this waits for the device; check the host copy the wire holds instead.
    """
    if tensor.dtype in _NUMPY_FLOATS and tensor.device.type == "cpu":
        return bool(np.isfinite(tensor.detach().numpy()).all())
    return bool(torch.isfinite(tensor).all())


def all_finite_parameters(parameters: Iterable[torch.Tensor]) -> bool:
    """Whether every entry of every tensor is finite: those on an accelerator in one read."""
    on_device = []
    for parameter in parameters:
        if parameter.device.type == "cpu":
            if not all_finite(parameter):
                return False
        else:
            on_device.append(torch.isfinite(parameter.detach()).all())
    return not on_device or bool(torch.stack(on_device).all())


def id_bounds(ids: torch.Tensor) -> tuple[int, int]:
    """Smallest and largest entry of a non-empty int64 id tensor."""
    values = ids.numpy()
    return int(values.min()), int(values.max())
