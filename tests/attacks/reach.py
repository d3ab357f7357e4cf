"""What an object can reach: the test of "an attack sees only what its role receives".

``Reach.of(root)`` walks every reference an attack could follow without importing anything:
attributes, containers, closures and bound methods (not module globals, not classes, which any
code can import; ``gc`` is out of scope: no test can stop a determined cheat inside one
process, but every path the composition root hands out is checked).
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

_LEAVES = (str, bytes, bytearray, int, float, complex, bool, type(None), range, torch.dtype)
_OPAQUE = (types.ModuleType, type, types.BuiltinFunctionType, torch.device, torch.Generator)


@dataclass
class Reach:
    """Every object and tensor storage reachable from some roots.

    Attributes:
        objects: The reachable objects, by ``id``.
        storages: The data pointers of every reachable tensor's storage.
    """

    objects: dict[int, object] = field(default_factory=dict)
    storages: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, *roots: object, stop: tuple[type, ...] = ()) -> Reach:
        """Walk from ``roots``; an instance of a ``stop`` type is recorded but not entered."""
        reach = cls()
        pending = list(roots)
        while pending:
            item = pending.pop()
            if id(item) in reach.objects or isinstance(item, _LEAVES):
                continue
            reach.objects[id(item)] = item
            if isinstance(item, torch.Tensor):
                if item.numel():
                    reach.storages.add(item.untyped_storage().data_ptr())
                continue
            if isinstance(item, (*_OPAQUE, *stop)):
                continue
            pending.extend(_references(item))
        return reach

    def instances(self, kinds: tuple[type, ...]) -> list[object]:
        """The reachable objects of any of ``kinds``."""
        return [o for o in self.objects.values() if isinstance(o, kinds)]


def _references(item: object) -> Iterator[object]:
    """What ``item`` refers to directly (beyond its class)."""
    if isinstance(item, dict):
        yield from item.keys()
        yield from item.values()
        return
    if isinstance(item, list | tuple | set | frozenset):
        yield from item
        return
    if isinstance(item, types.MethodType):
        yield item.__self__
        yield item.__func__
        return
    if isinstance(item, types.FunctionType):
        yield from (cell.cell_contents for cell in item.__closure__ or ())
        yield from item.__defaults__ or ()
        return
    if isinstance(item, types.CellType):
        yield item.cell_contents
        return
    if hasattr(item, "__dict__"):
        yield vars(item)
    for slot in getattr(type(item), "__slots__", ()):
        if hasattr(item, slot):
            yield getattr(item, slot)
