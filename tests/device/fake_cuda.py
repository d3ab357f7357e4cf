"""The state of the fake CUDA device: which storages are on it, and the host waits counted.

``fake_accelerator`` explains the fake; ``fake_modes`` holds the torch modes that use this.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

CUDA = torch.device("cuda", 0)
MIXED = (
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)
TO_NUMPY = (
    "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host"
    " memory first."
)

COPY_TO_HOST = "copy to host"
SCALAR_READ = "scalar read"
BLOCKING_COPY_TO_DEVICE = "blocking copy to device"
DATA_DEPENDENT = "data-dependent shape"
DEVICE_QUERY = "device query"
SYNCHRONIZE = "synchronize"

_VFL = "/src/vfl/"


class FakeCuda:
    """Which storages are on the pretend device, and the host waits it would have cost."""

    def __init__(self) -> None:
        self._on_device: dict[int, StorageWeakRef] = {}
        self.syncs: Counter[str] = Counter()
        self.where: list[tuple[str, str]] = []  # (kind, the vfl frame that caused it)
        self._cuda_rng = torch.Generator()
        self._forget_at = 4096

    # -- marking ---------------------------------------------------------------------------

    def on_device(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` lives on the pretend CUDA device."""
        if tensor.is_meta or tensor.layout != torch.strided:
            return False
        return self.storage_on_device(tensor.untyped_storage())

    def storage_on_device(self, storage: Any) -> bool:
        """Whether ``storage`` (an ``UntypedStorage``) is on the pretend device."""
        ref = self._on_device.get(getattr(storage, "_cdata", -1))
        return ref is not None and alive(ref)

    def mark(self, tensor: torch.Tensor) -> None:
        """Put ``tensor``'s storage on the pretend device."""
        self.mark_storage(tensor.untyped_storage())

    def mark_storage(self, storage: Any) -> None:
        """Put ``storage`` (an ``UntypedStorage``) on the pretend device."""
        self._on_device[storage._cdata] = weak(storage)
        if len(self._on_device) > self._forget_at:  # forget storages freed since
            self._on_device = {k: r for k, r in self._on_device.items() if alive(r)}
            self._forget_at = max(4096, 2 * len(self._on_device))

    def unmark(self, tensor: torch.Tensor) -> None:
        """Put ``tensor``'s storage back on the CPU."""
        self._on_device.pop(tensor.untyped_storage()._cdata, None)

    def count(self, kind: str) -> None:
        """Record one host wait of ``kind``, with the two innermost vfl lines that caused it."""
        self.syncs[kind] += 1
        places: list[str] = []
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and len(places) < 2:
            name = frame.f_code.co_filename
            if _VFL in name:
                places.append(f"{name.split(_VFL)[-1]}:{frame.f_lineno}")
            frame = frame.f_back
        self.where.append((kind, " < ".join(places) or "?"))

    def reset_counts(self) -> None:
        """Forget the host waits counted so far."""
        self.syncs.clear()
        self.where.clear()

    def report(self) -> str:
        """The host waits counted, by kind and place (for assertion messages)."""
        places = Counter(self.where)
        return "\n".join(f"{n:5d}  {kind:24s} {place}" for (kind, place), n in places.most_common())

    # -- torch.cuda as a one-device machine --------------------------------------------------

    def query(self, answer: Any) -> Callable[..., Any]:
        """A device query that answers ``answer`` and is counted."""

        def ask(*args: Any, **kwargs: Any) -> Any:
            self.count(DEVICE_QUERY)
            return answer

        return ask

    def get_rng_state(self, device: Any = "cuda") -> torch.Tensor:
        """The pretend device's generator state (torch asks for the current device if unnamed)."""
        self._which(device)
        return self._cuda_rng.get_state()

    def set_rng_state(self, state: torch.Tensor, device: Any = "cuda") -> None:
        """Set the pretend device's generator state."""
        self._which(device)
        self._cuda_rng.set_state(state)

    def _which(self, device: Any) -> None:
        if not isinstance(device, int) and torch.device(device).index is None:
            self.count(DEVICE_QUERY)

    def manual_seed(self, seed: int) -> None:
        """Seed the pretend device's generator."""
        self._cuda_rng.manual_seed(seed)

    def synchronize(self, device: Any = None) -> None:
        """Wait for the device: counted."""
        self.count(SYNCHRONIZE)


def weak(storage: Any) -> StorageWeakRef:
    """A weak reference to ``storage``: while it lives, no new storage takes the old one's id."""
    return StorageWeakRef(storage)  # type: ignore[no-untyped-call]


def alive(ref: StorageWeakRef) -> bool:
    return not ref.expired()  # type: ignore[no-untyped-call]
