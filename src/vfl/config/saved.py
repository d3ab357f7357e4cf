"""Reading a config vfl wrote earlier: settings that did not apply are accepted, then reset.

A config vfl wrote earlier (a run's ``config.toml``, a checkpoint's, a bundle's) is read
``with saved_settings()``, which accepts values of fields that do not apply
(``vfl.config.applicability``), and ``canonical`` then resets them to their defaults: they never
changed what the run computed, so the run compares equal to the same run configured without
them. A sweep reads its settings the same way, since a ``[set]`` key may apply to some of its
grid's settings only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from vfl.config.applicability import inapplicable
from vfl.config.io import from_mapping
from vfl.config.schema import RunConfig

S = TypeVar("S")
_SAVED: ContextVar[bool] = ContextVar("saved_settings", default=False)


@contextmanager
def saved_settings() -> Iterator[None]:
    """Within the block, sections accept values of fields that do not apply."""
    token = _SAVED.set(True)
    try:
        yield
    finally:
        _SAVED.reset(token)


def reading_saved() -> bool:
    """Whether sections are being read ``with saved_settings()``."""
    return _SAVED.get()


def saved_config(raw: Mapping[str, Any]) -> RunConfig:
    """A run config vfl wrote earlier, with every field that does not apply at its default."""
    with saved_settings():
        config = from_mapping(RunConfig, raw)
    return canonical(config)[0]


def canonical(section: S, prefix: str = "") -> tuple[S, list[str]]:
    """``section`` with every field that does not apply reset to its default, and their keys.

    Sub-sections first (so that a condition reads their canonical values). Keys are dotted
    paths from ``section``, after ``prefix``.
    """
    reset: list[str] = []
    with saved_settings():
        changes: dict[str, object] = {}
        for field in dataclasses.fields(section):  # type: ignore[arg-type]
            value = getattr(section, field.name)
            if dataclasses.is_dataclass(value):
                changes[field.name], keys = canonical(value, f"{prefix}{field.name}.")
                reset += keys
            elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
                items = [canonical(item, f"{prefix}{field.name}.") for item in value]
                changes[field.name] = tuple(item for item, _ in items)
                reset += [key for _, keys in items for key in keys]
        result = dataclasses.replace(section, **changes)  # type: ignore[type-var]
        for key, _, default, _ in inapplicable(result):
            result = _replaced(result, key, default)
            reset.append(prefix + key)
    return result, reset


def _replaced(section: S, key: str, value: object) -> S:
    name, _, rest = key.partition(".")
    if rest:
        value = _replaced(getattr(section, name), rest, value)
    return dataclasses.replace(section, **{name: value})  # type: ignore[type-var]
