"""The base of every config section: declared field constraints first, then cross-field rules.

A section is a frozen dataclass deriving from ``Section``. Building one checks each field's
``typing.Annotated`` constraints (``vfl.config.fields``), in field order, and then every rule
registered for its class with ``@rule(Cls)``. Both raise ``FieldError`` naming the key (relative
to the section; ``from_mapping`` prefixes the section's path).

Example:
    >>> from vfl.config import PartitionConfig, TrainConfig
    >>> TrainConfig(epochs=0)
    Traceback (most recent call last):
    ...
    vfl.config.io.FieldError: epochs: must be >= 1, got 0
    >>> PartitionConfig(scheme="halves", num_parties=3)
    Traceback (most recent call last):
    ...
    vfl.config.io.FieldError: num_parties: scheme 'halves' makes 2 parties, got 3
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from vfl.config.fields import Constraint
from vfl.config.io import FieldError

S = TypeVar("S", bound="Section")
Rule = Callable[[Any], None]
Constrained = tuple[tuple[str, Any, tuple[Constraint, ...]], ...]

_RULES: dict[type, list[Rule]] = {}
_CONSTRAINTS: dict[type, Constrained] = {}


class Section:
    """Base class of config dataclasses: validates declared constraints, then the class's rules."""

    def __post_init__(self) -> None:
        for name, hint, constraints in constraints_of(type(self)):
            value = getattr(self, name)
            for constraint in constraints:
                if not constraint.admits(value):
                    raise FieldError(name, constraint.message(value, hint))
        for check_rule in rules_of(type(self)):
            check_rule(self)


def rule(cls: type[S]) -> Callable[[Callable[[S], None]], Callable[[S], None]]:
    """Register the decorated function as a cross-field rule of section class ``cls``.

    Rules run in registration order after the field checks; a rule raises ``FieldError`` (e.g.
    through ``check``) naming the offending key.
    """

    def register(function: Callable[[S], None]) -> Callable[[S], None]:
        _RULES.setdefault(cls, []).append(function)
        return function

    return register


def rules_of(cls: type) -> tuple[Rule, ...]:
    """The rules registered for ``cls`` and its base classes, base classes first."""
    return tuple(found for klass in reversed(cls.__mro__) for found in _RULES.get(klass, ()))


def constraints_of(cls: type) -> Constrained:
    """``(field name, plain type, constraints)`` of every constrained field of dataclass ``cls``.

    Computed once per class (``typing.get_type_hints`` with the ``Annotated`` extras).
    """
    if cls not in _CONSTRAINTS:
        _CONSTRAINTS[cls] = _find_constraints(cls)
    return _CONSTRAINTS[cls]


def _find_constraints(cls: type) -> Constrained:
    hints = typing.get_type_hints(cls, include_extras=True)
    found = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        if typing.get_origin(hint) is not Annotated:
            continue
        plain, *extras = typing.get_args(hint)
        constraints = tuple(extra for extra in extras if isinstance(extra, Constraint))
        if constraints:
            found.append((field.name, plain, constraints))
    return tuple(found)
