"""Compressors by name: one ``register_compressor`` line per compressor, read everywhere else.

A compressor class carries its registration: its ``name``, its parameters (the fields of the
frozen dataclass, which the ``[compress.*]`` keys of the same names fill) and its capabilities
(``Compressor``'s class flags: ``selects``, ``lossless``, ``max_bits``, ...). Config rules, the
composition root and the docs read them here; nothing else names a compressor.

Example:
    >>> make_compressor("scalar", bits=3, low=-1.0, high=1.0)
    ScalarQuantizer(bits=3, low=-1.0, high=1.0)
    >>> parameters("topk")
    ('bits', 'k', 'ratio', 'per_row')
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from vfl.compress.base import Compressor
from vfl.compress.identity import Identity
from vfl.compress.lattice import LatticeQuantizer
from vfl.compress.scalar import ScalarQuantizer
from vfl.compress.topk import TopK
from vfl.errors import ConfigError
from vfl.registry import Registry

C = TypeVar("C", bound=type[Compressor])

COMPRESSORS: Registry[type[Compressor]] = Registry("compressor", key="compress.*.name")
"""Every compressor class by its ``name``."""
_PARAMETERS: dict[str, tuple[str, ...]] = {}


def register_compressor(cls: C) -> C:
    """Register a ``Compressor`` subclass (a frozen dataclass) under its ``name``.

    Its dataclass fields are its parameters: a run passes it the ``[compress.*]`` keys of the
    same names. Usable as a class decorator.

    Raises:
        TypeError: if ``cls`` is not a dataclass ``Compressor`` subclass with a ``name``.
        ValueError: if its name is taken.
    """
    if not (isinstance(cls, type) and issubclass(cls, Compressor)):
        raise TypeError(f"{cls!r} is not a Compressor subclass")
    if not dataclasses.is_dataclass(cls) or not getattr(cls, "name", ""):
        raise TypeError(f"{cls.__name__} must be a dataclass with a class-level name")
    COMPRESSORS.register(cls.name, cls)
    _PARAMETERS[cls.name] = tuple(field.name for field in dataclasses.fields(cls))
    return cls


for _builtin in (Identity, ScalarQuantizer, LatticeQuantizer, TopK):
    register_compressor(_builtin)


def unregister_compressor(name: str) -> None:
    """Take a compressor out of the registry again (a test's own, after the test)."""
    COMPRESSORS.remove(name)
    del _PARAMETERS[name]


def available_compressors() -> tuple[str, ...]:
    """The registered names, sorted."""
    return tuple(sorted(COMPRESSORS))


def parameters(name: str) -> tuple[str, ...]:
    """The parameters the compressor called ``name`` takes (its dataclass fields).

    Raises:
        ConfigError: for an unknown name.
    """
    COMPRESSORS[name]
    return _PARAMETERS[name]


def make_compressor(name: str, **params: Any) -> Compressor:
    """The compressor called ``name``, built with keyword parameters ``params``.

    Raises:
        ConfigError: for an unknown name, an unknown parameter, or an invalid value (the message
            names the parameter and what is valid).
    """
    cls = COMPRESSORS[name]
    valid = parameters(name)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ConfigError(
            f"compressor {name!r} has no parameter {unknown[0]!r};"
            f" valid: {', '.join(valid) or 'none'}"
        )
    return cls(**params)
