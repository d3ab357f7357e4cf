"""The torch modes of the fake CUDA device (``fake_accelerator`` explains what they do).

``Operations`` sees every ATen operation (the backward pass's and the optimizers' included):
it checks devices and propagates the marks. ``Calls`` sees torch's Python surface: it moves
tensors to the pretend device, answers their device attributes and refuses ``.numpy()``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from tests.device.fake_cuda import (
    BLOCKING_COPY_TO_DEVICE,
    COPY_TO_HOST,
    CUDA,
    DATA_DEPENDENT,
    MIXED,
    SCALAR_READ,
    TO_NUMPY,
    FakeCuda,
)

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


class Operations(TorchDispatchMode):  # type: ignore[no-untyped-call]
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


class Calls(TorchFunctionMode):
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

    _handlers: ClassVar[dict[str, Callable[[Calls, Any, Sequence[Any], dict[str, Any]], Any]]] = {
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
