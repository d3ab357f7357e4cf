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
per thread); vfl's in-process runs and its backward passes run on that thread.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from types import FrameType
from typing import Any, ClassVar

import pytest
import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

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
aten = torch.ops.aten
_COPIES = {aten.copy_.default, aten._copy_from.default, aten._copy_from_and_resize.default}
_INDEXING = {
    aten.index.Tensor: 1,
    aten.index_put_.default: 1,
    aten.index_put.default: 1,
    aten._index_put_impl_.default: 1,
}
"""Operations whose indices (the argument at that position) may stay on the CPU under CUDA."""
_DATA_DEPENDENT = {
    aten.nonzero.default,
    aten.masked_select.default,
    aten._unique2.default,
    aten.unique_dim.default,
    aten.unique_consecutive.default,
}
_GETTERS: dict[Any, Callable[[], Any]] = {
    torch._C.TensorBase.device: lambda: CUDA,
    torch._C.TensorBase.is_cuda: lambda: True,
    torch._C.TensorBase.is_cpu: lambda: False,
}


class FakeCuda:
    """Which storages are on the pretend device, and the host waits it would have cost."""

    def __init__(self) -> None:
        self._on_device: dict[int, StorageWeakRef] = {}
        self.syncs: Counter[str] = Counter()
        self.where: list[tuple[str, str]] = []  # (kind, the vfl frame that caused it)
        self._cuda_rng = torch.Generator()

    # -- marking ---------------------------------------------------------------------------

    def on_device(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` lives on the pretend CUDA device."""
        if tensor.is_meta or tensor.layout != torch.strided:
            return False
        storage = tensor.untyped_storage()
        ref = self._on_device.get(storage._cdata)
        return ref is not None and _alive(ref)

    def mark(self, tensor: torch.Tensor) -> None:
        """Put ``tensor``'s storage on the pretend device."""
        storage = tensor.untyped_storage()
        self._on_device[storage._cdata] = _weak(storage)
        if len(self._on_device) > 4096:  # forget storages freed since
            self._on_device = {k: r for k, r in self._on_device.items() if _alive(r)}

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


def _weak(storage: Any) -> StorageWeakRef:
    """A weak reference to ``storage`` (the storage cannot be reused while it lives)."""
    return StorageWeakRef(storage)  # type: ignore[no-untyped-call]


def _alive(ref: StorageWeakRef) -> bool:
    return not ref.expired()  # type: ignore[no-untyped-call]


class _FakeStream:
    def is_capturing(self) -> bool:
        return False


def _tensors(tree: Any) -> list[torch.Tensor]:
    """The tensors in ``tree`` (ATen arguments: tensors, or lists and tuples of them)."""
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, dict):
        tree = list(tree.values())
    if not isinstance(tree, list | tuple):
        return []
    found = []
    for item in tree:
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, list | tuple | dict):
            found.extend(_tensors(item))
    return found


def _is_cuda(device: Any) -> bool:
    return device is not None and torch.device(device).type == "cuda"


class _Operations(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Every ATen operation: the device-mixing check and the propagation of marks."""

    def __init__(self, fake: FakeCuda) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.fake = fake

    def __torch_dispatch__(
        self,
        func: Any,
        types: Sequence[type],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        fake = self.fake
        inputs = _tensors((args, kwargs))
        marked = [t for t in inputs if fake.on_device(t)]
        if func in _COPIES:
            return self._copy(func, args, kwargs)
        if marked:
            self._check_same_device(func, args, kwargs, inputs)
            self._count(func, args)
        out = func(*args, **kwargs)
        if marked:
            for tensor in _tensors(out):
                fake.mark(tensor)
        return out

    def _copy(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        fake = self.fake
        target, source = args[0], args[1]
        if fake.on_device(source) and not fake.on_device(target):
            fake.count(COPY_TO_HOST)
        elif fake.on_device(target) and not fake.on_device(source):
            non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
            if source.dim() > 0 and not non_blocking:
                fake.count(BLOCKING_COPY_TO_DEVICE)
        return func(*args, **kwargs)

    def _check_same_device(
        self, func: Any, args: Sequence[Any], kwargs: dict[str, Any], inputs: list[torch.Tensor]
    ) -> None:
        skip = set()
        position = _INDEXING.get(func)
        if position is not None and len(args) > position:
            skip = {id(t) for t in _tensors(args[position])}
        for tensor in inputs:
            if id(tensor) in skip or self.fake.on_device(tensor):
                continue
            if tensor.dim() > 0:
                raise RuntimeError(f"{MIXED} (when checking arguments of {func})")

    def _count(self, func: Any, args: Sequence[Any]) -> None:
        if func is aten._local_scalar_dense.default:
            self.fake.count(SCALAR_READ)
        elif func in _DATA_DEPENDENT or _masked(func, args):
            self.fake.count(DATA_DEPENDENT)


def _masked(func: Any, args: Sequence[Any]) -> bool:
    """Whether ``func`` indexes with a boolean mask (its output size depends on the data)."""
    return func is aten.index.Tensor and any(t.dtype == torch.bool for t in _tensors(args[1]))


class _Calls(TorchFunctionMode):
    """torch's Python surface: device moves, device attributes, host conversions."""

    def __init__(self, fake: FakeCuda) -> None:
        super().__init__()
        self.fake = fake

    def __torch_function__(
        self,
        func: Any,
        types: Sequence[type],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        fake = self.fake
        owner = getattr(func, "__self__", None)
        if owner in _GETTERS and args and fake.on_device(args[0]):
            return _GETTERS[owner]()
        handler = self._handlers.get(getattr(func, "__name__", ""))
        if handler is not None and args and isinstance(args[0], torch.Tensor):
            return handler(self, func, args, kwargs)
        if _is_cuda(kwargs.get("device")):
            return self._made_on_device(func, args, kwargs)
        return func(*args, **kwargs)

    def _to(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        tensor, rest = args[0], args[1:]
        other = rest[0] if rest and isinstance(rest[0], torch.Tensor) else None
        device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*rest, **kwargs)
        if other is not None and self.fake.on_device(other):
            device = CUDA
        copy = bool(kwargs.get("copy", False))
        return self._move(tensor, device, dtype, non_blocking, memory_format, copy)

    def _cuda(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        non_blocking = bool(kwargs.get("non_blocking", False))
        return self._move(args[0], CUDA, None, non_blocking, kwargs.get("memory_format"), False)

    def _cpu(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        return self._move(
            args[0], torch.device("cpu"), None, False, kwargs.get("memory_format"), False
        )

    def _move(
        self,
        tensor: torch.Tensor,
        device: torch.device | None,
        dtype: torch.dtype | None,
        non_blocking: bool,
        memory_format: torch.memory_format | None,
        copy: bool,
    ) -> torch.Tensor:
        fake = self.fake
        here = fake.on_device(tensor)
        there = here if device is None else device.type == "cuda"
        options: dict[str, Any] = {"dtype": dtype or tensor.dtype, "copy": copy or here != there}
        if memory_format is not None:
            options["memory_format"] = memory_format
        moved = tensor.to(**options)
        if here != there:
            if there:
                if not non_blocking:
                    fake.count(BLOCKING_COPY_TO_DEVICE)
                fake.mark(moved)
            else:
                fake.count(COPY_TO_HOST)
                fake.unmark(moved)
        return moved

    def _to_numpy(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        if self.fake.on_device(args[0]):
            raise TypeError(TO_NUMPY)
        return func(*args, **kwargs)

    def _to_list(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        if self.fake.on_device(args[0]):
            self.fake.count(COPY_TO_HOST)
        return func(*args, **kwargs)

    def _get_device(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        return 0 if self.fake.on_device(args[0]) else func(*args, **kwargs)

    def _pin_memory(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        if self.fake.on_device(args[0]):
            raise RuntimeError(
                "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned"
            )
        return args[0].clone()  # a page-locked copy, still on the CPU

    def _deepcopy(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        copied = func(*args, **kwargs)
        if self.fake.on_device(args[0]):
            self.fake.mark(copied)
        return copied

    _handlers: ClassVar[dict[str, Callable[[_Calls, Any, Sequence[Any], dict[str, Any]], Any]]] = {
        "to": _to,
        "cuda": _cuda,
        "cpu": _cpu,
        "numpy": _to_numpy,
        "__array__": _to_numpy,
        "tolist": _to_list,
        "get_device": _get_device,
        "pin_memory": _pin_memory,
        "__deepcopy__": _deepcopy,
    }

    def _made_on_device(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        generator = kwargs.get("generator")
        if isinstance(generator, torch.Generator) and generator.device.type != "cuda":
            raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
        out = func(*args, **{**kwargs, "device": "cpu"})
        for tensor in _tensors(out):
            self.fake.mark(tensor)
        if getattr(func, "__name__", "") in ("tensor", "as_tensor"):  # data copied from the host
            self.fake.count(BLOCKING_COPY_TO_DEVICE)
        return out


@contextmanager
def fake_cuda_device() -> Iterator[FakeCuda]:
    """Pretend, inside the block, that this machine has one CUDA device (see the module)."""
    fake = FakeCuda()
    with pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        _patch_torch_cuda(fake, monkeypatch)
        stack.enter_context(_saved_as_cuda(fake))
        stack.enter_context(_Operations(fake))
        stack.enter_context(_Calls(fake))
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
        ref = fake._on_device.get(getattr(storage, "_cdata", -1))
        return "cuda:0" if ref is not None and _alive(ref) else None

    def restore(storage: Any, location: str) -> Any:
        if not location.startswith("cuda"):
            return None
        fake._on_device[storage._cdata] = _weak(storage)
        return storage

    torch.serialization.register_package(0, tag, restore)
    try:
        yield
    finally:
        registry[:] = before
