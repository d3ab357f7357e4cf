"""torch's SGD and Adam, run without importing ``torch._dynamo``.

torch's ``Optimizer`` wraps ``add_param_group`` (which ``__init__`` calls), ``zero_grad``,
``state_dict`` and ``load_state_dict`` in ``torch._disable_dynamo``, and each optimizer's
``step`` in a wrapper that calls ``torch._dynamo.graph_break()``: both import ``torch._dynamo``
(and sympy with it) on their first call, about 1 s, as long as the import of torch itself, in
every process that trains.
Both wrappers only tell torch's compiler to leave these functions alone; vfl never compiles an
optimizer, so in vfl they do nothing but the import.

``EagerSGD`` and ``EagerAdam`` are torch's classes with those wrappers taken off
(``inspect.unwrap``, which follows the ``__wrapped__`` each wrapper records): the same
arithmetic, the same state and ``state_dict`` format, the same hooks, and ``step`` under the
same grad mode torch's wrapper sets (``defaults["differentiable"]``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch.optim import Optimizer


def _unwrapped(function: Callable[..., Any]) -> Callable[..., Any]:
    unwrapped: Callable[..., Any] = inspect.unwrap(function)
    return unwrapped


_ADD_PARAM_GROUP = _unwrapped(Optimizer.add_param_group)
_ZERO_GRAD = _unwrapped(Optimizer.zero_grad)
_STATE_DICT = _unwrapped(Optimizer.state_dict)
_LOAD_STATE_DICT = _unwrapped(Optimizer.load_state_dict)
_SGD_STEP = _unwrapped(torch.optim.SGD.step)
_ADAM_STEP = _unwrapped(torch.optim.Adam.step)


class _WithoutDynamo(Optimizer):
    """``Optimizer``'s bookkeeping without the ``torch._disable_dynamo`` wrappers."""

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        _ADD_PARAM_GROUP(self, param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        _ZERO_GRAD(self, set_to_none)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = _STATE_DICT(self)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        _LOAD_STATE_DICT(self, state_dict)

    def _step_without_dynamo(
        self, step: Callable[..., Any], closure: Callable[[], float] | None
    ) -> float | None:
        with torch.set_grad_enabled(bool(self.defaults["differentiable"])):
            loss: float | None = step(self, closure)
        return loss


class EagerSGD(_WithoutDynamo, torch.optim.SGD):
    """``torch.optim.SGD`` without ``torch._dynamo`` (see the module's documentation)."""

    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One step of SGD, as ``torch.optim.SGD.step``."""
        return self._step_without_dynamo(_SGD_STEP, closure)


class EagerAdam(_WithoutDynamo, torch.optim.Adam):
    """``torch.optim.Adam`` without ``torch._dynamo`` (see the module's documentation)."""

    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One step of Adam, as ``torch.optim.Adam.step``."""
        return self._step_without_dynamo(_ADAM_STEP, closure)
