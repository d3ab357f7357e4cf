"""A CUDA device that is not there: the CPU plays it, and fails where CUDA would fail.

``FakeCuda`` makes vfl believe that one CUDA device exists, so that ``train.device = "cuda"``
runs on a CPU-only machine, and it keeps track of which tensors would live on that device:

- a tensor moved to it (``.to("cuda")``, ``.cuda()``, ``Module.to``), or made there by a factory
  with ``device="cuda"``, is made on the CPU and its storage is marked as on the accelerator
  (by the storage itself, held by a weak reference, so views, ``.data`` and parameters sharing it
  stay marked, and a freed storage's address cannot mark a new one);
- every ATen operation, the backward pass's and the optimizers' included, marks its outputs when
  one of its inputs is marked;
- an operation that meets a marked tensor and an unmarked one (other than a 0-dim CPU scalar,
  and the CPU indices of advanced indexing, which CUDA accepts) raises CUDA's "Expected all
  tensors to be on the same device"; ``.numpy()`` of a marked tensor raises CUDA's TypeError;
- ``.device``, ``.is_cuda`` and ``.get_device()`` of a marked tensor answer ``cuda:0``; a
  checkpoint saved from marked tensors records ``cuda:0``, so a CPU-only process without the
  fake fails to load it without ``map_location`` exactly as it would after a real CUDA run;
- it counts the calls that would make the host wait for the GPU (``syncs``): copies to the
  host (``.cpu()``, ``.tolist()``, ``copy_`` into a CPU tensor), scalar reads (``.item()``,
  ``float()``, ``bool()``), host-to-device copies without ``non_blocking``, operations whose
  output size depends on the data (``nonzero``, boolean masks), device queries and
  ``torch.cuda.synchronize``.

Only tensors touched on the thread that entered the fake are tracked (torch's modes are
per thread); vfl's in-process runs and its backward passes run on that thread. The state lives
in ``fake_cuda``, the two torch modes in ``fake_modes``; this module puts them together.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
import torch

from tests.device.fake_cuda import (
    BLOCKING_COPY_TO_DEVICE,
    COPY_TO_HOST,
    CUDA,
    DATA_DEPENDENT,
    DEVICE_QUERY,
    MIXED,
    SCALAR_READ,
    SYNCHRONIZE,
    TO_NUMPY,
    FakeCuda,
)
from tests.device.fake_modes import Calls, Operations

__all__ = [
    "BLOCKING_COPY_TO_DEVICE",
    "COPY_TO_HOST",
    "CUDA",
    "DATA_DEPENDENT",
    "DEVICE_QUERY",
    "MIXED",
    "SCALAR_READ",
    "SYNCHRONIZE",
    "TO_NUMPY",
    "FakeCuda",
    "fake_cuda_device",
]


class _FakeStream:
    def is_capturing(self) -> bool:
        return False


@contextmanager
def fake_cuda_device() -> Iterator[FakeCuda]:
    """Pretend, inside the block, that this machine has one CUDA device (see the module)."""
    fake = FakeCuda()
    with pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        _patch_torch_cuda(fake, monkeypatch)
        stack.enter_context(_saved_as_cuda(fake))
        stack.enter_context(Operations(fake))
        stack.enter_context(Calls(fake))
        yield fake


def _patch_torch_cuda(fake: FakeCuda, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, answer in (("is_available", True), ("device_count", 1), ("current_device", 0)):
        monkeypatch.setattr(torch.cuda, name, fake.query(answer))
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state", fake.get_rng_state)
    monkeypatch.setattr(torch.cuda, "set_rng_state", fake.set_rng_state)
    monkeypatch.setattr(torch.cuda, "manual_seed", fake.manual_seed)
    monkeypatch.setattr(torch.cuda, "manual_seed_all", fake.manual_seed)
    monkeypatch.setattr(torch.cuda, "synchronize", fake.synchronize)
    # torch's optimizers ask for the accelerator (and whether it is available) on every step
    monkeypatch.setattr(torch._C, "_accelerator_getAccelerator", lambda: torch.device("cuda"))
    monkeypatch.setattr(torch.accelerator, "current_stream", lambda *a, **k: _FakeStream())


@contextmanager
def _saved_as_cuda(fake: FakeCuda) -> Iterator[None]:
    """``torch.save`` records marked storages as ``cuda:0``; ``torch.load`` reads them back."""
    registry = torch.serialization._package_registry
    before = list(registry)

    def tag(storage: Any) -> str | None:
        return "cuda:0" if fake.storage_on_device(storage) else None

    def restore(storage: Any, location: str) -> Any:
        if not location.startswith("cuda"):
            return None
        fake.mark_storage(storage)
        return storage

    torch.serialization.register_package(0, tag, restore)
    try:
        yield
    finally:
        registry[:] = before
