"""Where a role's model runs: the CPU, or an accelerator (CUDA, Apple's MPS)."""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from vfl.errors import ConfigError

DeviceName = Literal["auto", "cpu", "cuda", "mps"]
DEVICES: tuple[DeviceName, ...] = ("auto", "cpu", "cuda", "mps")


def resolve_device(name: str, *, key: str = "train.device") -> torch.device:
    """The torch device ``name`` names; ``auto`` picks CUDA, then MPS, then the CPU.

    ``key`` is the setting that chose it, for the error message.

    Raises:
        ConfigError: if the named accelerator is not available on this machine.
    """
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"{key} = 'cuda', but this machine has no CUDA device; use 'auto' or 'cpu'"
        )
    if name == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"{key} = 'mps', but MPS is not available here; use 'auto' or 'cpu'")
    if name not in DEVICES:
        raise ConfigError(f"{key}: unknown {name!r}; valid: {', '.join(DEVICES)}")
    return torch.device(name)


def model_device(module: nn.Module) -> torch.device:
    """The device of ``module``'s parameters (the CPU for a module without any)."""
    for parameter in module.parameters():
        return parameter.device
    for buffer in module.buffers():
        return buffer.device
    return torch.device("cpu")
