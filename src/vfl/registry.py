"""Extension points: every entry is added by one registration, and every other place reads it.

A ``Registry`` holds the entries of one extension point (compressors, bit and ratio schedules,
protocols, privacy mechanisms, data sets, attacks) by name, in registration order. An entry
carries its name, the config fields it reads and its capabilities (flags that generic code
reads, as Opacus's grad samplers and accountants carry theirs), so that nothing else names it:
config rules, the composition root and the docs generator all ask the registry.

Example:
    >>> shapes = Registry[int]("shape", key="model.shape")
    >>> shapes.register("square", 4)
    4
    >>> shapes["square"], shapes.names()
    (4, ('square',))
    >>> shapes["circle"]
    Traceback (most recent call last):
    ...
    vfl.errors.ConfigError: model.shape: unknown shape 'circle'; valid: 'square'
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

from vfl.errors import ConfigError

E = TypeVar("E")


class Registry(Generic[E]):
    """The entries of one extension point by name.

    Args:
        what: What an entry is, in words (``"compressor"``), for error messages.
        key: The config key that picks an entry (``"compress.*.name"``), named in errors.
    """

    def __init__(self, what: str, *, key: str = "") -> None:
        self.what = what
        self.key = key
        self._entries: dict[str, E] = {}

    def register(self, name: str, entry: E) -> E:
        """Add ``entry`` under ``name``; returns it (so that it can serve as a decorator).

        Raises:
            ValueError: if ``name`` is empty or taken (a second registration would silently
                replace the first).
        """
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.what} needs a non-empty name, got {name!r}")
        if name in self._entries:
            raise ValueError(f"the {self.what} name {name!r} is registered already")
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> E:
        """Take ``name`` out again (a plug-in unloaded; a test's own entry after the test)."""
        return self._entries.pop(name)

    def __getitem__(self, name: str) -> E:
        """The entry called ``name``.

        Raises:
            ConfigError: for an unknown name, listing the registered ones.
        """
        entry = self._entries.get(name)
        if entry is None:
            where = f"{self.key}: " if self.key else ""
            raise ConfigError(f"{where}unknown {self.what} {name!r}; valid: {self.listing()}")
        return entry

    def get(self, name: str) -> E | None:
        """The entry called ``name``, or ``None``."""
        return self._entries.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._entries)

    def items(self) -> tuple[tuple[str, E], ...]:
        """``(name, entry)`` pairs, in registration order."""
        return tuple(self._entries.items())

    def listing(self) -> str:
        """The registered names for a message: ``'a', 'b'``."""
        return ", ".join(repr(name) for name in self._entries) or "none"


def resolve(reference: str) -> object:
    """The object a ``"package.module:name"`` reference names, importing its module.

    Registrations that a light module declares (no torch) name their implementation this way;
    only the layer that runs it resolves the reference.

    Raises:
        ConfigError: if the module or the name does not exist.
    """
    module_name, _, attribute = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise ConfigError(f"cannot import {module_name!r} (from {reference!r}): {error}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"{module_name!r} has no {attribute!r} (from {reference!r})") from None
