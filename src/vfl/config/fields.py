"""Constraint markers for config fields, declared next to the field with ``typing.Annotated``.

A section field states what values it accepts where it is declared::

    epochs: Annotated[int, Range(ge=1)] = 5
    test_fraction: Annotated[float, Range(gt=0, lt=1)] = 0.2
    hidden: Annotated[tuple[int, ...], Each(Range(ge=1), items="widths")] = (128,)

``vfl.config.section.Section`` checks every marker when a section is built. Each marker gives
the message of a rejected value (``must be >= 1, got 0``) and a short summary for the reference
page (``>= 1``).

Example:
    >>> Range(gt=0, lt=1).message(1.5, float)
    'must lie in (0, 1), got 1.5'
    >>> Range(ge=1, le=32).message(40, int)
    'must lie in 1..32, got 40'
    >>> Range(ge=0, note="0 = all").message(-1, int)
    'must be >= 0 (0 = all), got -1'
    >>> Range(gt=0).message(float("inf"), float)
    'must be a finite number > 0, got inf'
"""

from __future__ import annotations

import math
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


class Constraint(ABC):
    """What one config field accepts; subclasses are markers for ``typing.Annotated``."""

    @abstractmethod
    def admits(self, value: Any) -> bool:
        """Whether ``value`` is acceptable."""

    @abstractmethod
    def requirement(self, hint: Any) -> str:
        """What is valid, as the start of an error message (``must be >= 1``).

        Args:
            hint: The field's plain type (``int``, ``float``, ``tuple[int, ...]``).
        """

    @abstractmethod
    def summary(self, hint: Any) -> str:
        """What is valid, in a few symbols for the reference page (``>= 1``)."""

    def message(self, value: Any, hint: Any) -> str:
        """The error message for the rejected ``value``: what is valid, and what was given."""
        return f"{self.requirement(hint)}, got {show(value)}"


@dataclass(frozen=True)
class Range(Constraint):
    """A number within bounds: at most one lower (``ge``/``gt``) and one upper (``le``/``lt``).

    Integer fields bounded on both sides inclusively read ``1..32``; other two-sided ranges use
    interval notation (``(0, 1)``, ``[0, 1)``).

    Attributes:
        ge: Inclusive lower bound.
        gt: Exclusive lower bound.
        le: Inclusive upper bound.
        lt: Exclusive upper bound.
        note: What a special value means, shown in parentheses (``0 = all``).
    """

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.ge is not None and self.gt is not None:
            raise TypeError("Range takes at most one of ge and gt")
        if self.le is not None and self.lt is not None:
            raise TypeError("Range takes at most one of le and lt")
        if self.lower is None and self.upper is None:
            raise TypeError("Range needs a bound")

    @property
    def lower(self) -> float | None:
        """The lower bound, inclusive or not."""
        return self.ge if self.ge is not None else self.gt

    @property
    def upper(self) -> float | None:
        """The upper bound, inclusive or not."""
        return self.le if self.le is not None else self.lt

    def admits(self, value: Any) -> bool:
        """Whether ``value`` lies within the bounds (NaN and infinities never do)."""
        return (
            finite(value)
            and (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
            and (self.lt is None or value < self.lt)
        )

    def summary(self, hint: Any) -> str:
        """``>= 1``, ``1..32`` or ``[0, 1)``."""
        if self.lower is None or self.upper is None:
            operators = ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
            return next(f"{op} {bound}" for op, bound in operators if bound is not None)
        if hint is int and self.ge is not None and self.le is not None:
            return f"{self.ge}..{self.le}"
        left = "[" if self.ge is not None else "("
        right = "]" if self.le is not None else ")"
        return f"{left}{self.lower}, {self.upper}{right}"

    def requirement(self, hint: Any) -> str:
        """``must be >= 1``, ``must lie in (0, 1)``, plus the note in parentheses."""
        one_sided = self.lower is None or self.upper is None
        text = f"must {'be' if one_sided else 'lie in'} {self.summary(hint)}"
        return f"{text} ({self.note})" if self.note else text

    def message(self, value: Any, hint: Any) -> str:
        """As ``Constraint.message``; a NaN or an infinity is told it must be finite."""
        if finite(value):
            return super().message(value, hint)
        summary = self.summary(hint)
        within = summary if self.lower is None or self.upper is None else f"in {summary}"
        note = f" ({self.note})" if self.note else ""
        return f"must be a finite number {within}{note}, got {show(value)}"


@dataclass(frozen=True)
class Each(Constraint):
    """Every entry of a tuple field meets ``inner``.

    Attributes:
        inner: The constraint on each entry.
        items: What the entries are, to start the message (``widths must be >= 1``).
    """

    inner: Constraint
    items: str = ""

    def admits(self, value: Any) -> bool:
        """Whether every entry is acceptable."""
        return all(self.inner.admits(item) for item in value)

    def requirement(self, hint: Any) -> str:
        """The entries' requirement, after ``items``."""
        return f"{self.items} {self.inner.requirement(_item_hint(hint))}".strip()

    def summary(self, hint: Any) -> str:
        """``each >= 1``."""
        return f"each {self.inner.summary(_item_hint(hint))}"

    def message(self, value: Any, hint: Any) -> str:
        """As ``Constraint.message``; entries that are NaN or infinite are told to be finite."""
        if finite(value):
            return super().message(value, hint)
        return f"must hold finite numbers only, got {show(value)}"


@dataclass(frozen=True)
class NonEmpty(Constraint):
    """A non-empty string or tuple.

    Attributes:
        need: The message, saying what to give (``must name a data set``).
    """

    need: str = "must not be empty"

    def admits(self, value: Any) -> bool:
        """Whether ``value`` is non-empty."""
        return len(value) > 0

    def requirement(self, hint: Any) -> str:
        """``need``."""
        return self.need

    def summary(self, hint: Any) -> str:
        """``non-empty``."""
        return "non-empty"

    def message(self, value: Any, hint: Any) -> str:
        """``need`` alone: the value given is empty."""
        return self.need


class Choice(Constraint):
    """One of a set of values; subclasses say where the set comes from (``choices``)."""

    @abstractmethod
    def choices(self) -> tuple[Any, ...]:
        """The valid values."""

    def admits(self, value: Any) -> bool:
        """Whether ``value`` is one of ``choices()``."""
        return value in self.choices()

    def requirement(self, hint: Any) -> str:
        """``must be one of 'a', 'b'``."""
        return f"must be one of {', '.join(map(repr, self.choices()))}"

    def summary(self, hint: Any) -> str:
        """``one of 'a', 'b'``."""
        return f"one of {', '.join(map(repr, self.choices()))}"

    def message(self, value: Any, hint: Any) -> str:
        """``must be one of 'a', 'b'; got 'c'``."""
        return f"{self.requirement(hint)}; got {value!r}"


@dataclass(frozen=True)
class OneOf(Choice):
    """One of a fixed set of values (for a ``str`` field whose options live elsewhere).

    Attributes:
        options: The valid values.
    """

    options: tuple[Any, ...]

    def choices(self) -> tuple[Any, ...]:
        """``options``."""
        return self.options


@dataclass(frozen=True)
class Registered(Choice):
    """A name that an extension point's registry holds, read when a value is checked.

    An entry registered later (a plug-in's, a test's) is then accepted with no edit here.

    Attributes:
        names: The registered names, from the registry.
        extra: Names accepted besides the registered ones (``none``).
    """

    names: Callable[[], Sequence[str]]
    extra: tuple[str, ...] = ()

    def choices(self) -> tuple[Any, ...]:
        """``extra`` and every registered name."""
        return (*self.extra, *self.names())


@dataclass(frozen=True)
class Distinct(Constraint):
    """A tuple without repeated entries."""

    def admits(self, value: Any) -> bool:
        """Whether no entry repeats."""
        return len(set(value)) == len(value)

    def requirement(self, hint: Any) -> str:
        """``must not repeat``."""
        return "must not repeat"

    def summary(self, hint: Any) -> str:
        """``distinct``."""
        return "distinct"


@dataclass(frozen=True)
class Satisfies(Constraint):
    """Any other single-field test, with the message and summary it deserves.

    Attributes:
        test: Whether a value is acceptable.
        need: What is valid, as the start of the message (``must be host:port``).
        brief: The summary for the reference page.
    """

    test: Callable[[Any], bool]
    need: str
    brief: str = ""

    def admits(self, value: Any) -> bool:
        """``test(value)``."""
        return self.test(value)

    def requirement(self, hint: Any) -> str:
        """``need``."""
        return self.need

    def summary(self, hint: Any) -> str:
        """``brief``, or ``need`` without its ``must``."""
        return self.brief or self.need.removeprefix("must ").removeprefix("be ")


def pairs(value: Sequence[Sequence[object]]) -> bool:
    """Whether every entry of ``value`` holds exactly two items (``[[round, bits], ...]``)."""
    return all(len(pair) == 2 for pair in value)


def finite(value: Any) -> bool:
    """Whether no float in ``value`` (a number, or tuples and lists of them) is NaN or infinite.

    Example:
        >>> finite((1.0, (2, float("nan"))))
        False
    """
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, tuple | list):
        return all(finite(item) for item in value)
    return True


def show(value: Any) -> str:
    """A value as an error message shows it: tuples as the TOML arrays they came from."""
    return repr(_as_lists(value))


def _as_lists(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_as_lists(item) for item in value]
    return value


def _item_hint(hint: Any) -> Any:
    args = typing.get_args(hint)
    return args[0] if args else Any
