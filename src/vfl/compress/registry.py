"""Compressors by name, for configs: ``make_compressor("lattice", bits=2)``.

Example:
    >>> make_compressor("scalar", bits=3, low=-1.0, high=1.0)
    ScalarQuantizer(bits=3, low=-1.0, high=1.0)
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

from vfl.compress.base import Compressor
from vfl.compress.identity import Identity
from vfl.compress.lattice import LatticeQuantizer
from vfl.compress.scalar import ScalarQuantizer
from vfl.compress.topk import TopK
from vfl.errors import ConfigError

COMPRESSORS: MappingProxyType[str, type[Compressor]] = MappingProxyType(
    {cls.name: cls for cls in (Identity, ScalarQuantizer, LatticeQuantizer, TopK)}
)
"""Every compressor class by its ``name`` tag."""


def available_compressors() -> tuple[str, ...]:
    """The registered names, sorted."""
    return tuple(sorted(COMPRESSORS))


def make_compressor(name: str, **params: Any) -> Compressor:
    """The compressor called ``name``, built with keyword parameters ``params``.

    Raises:
        ConfigError: for an unknown name, an unknown parameter, or an invalid value (the message
            names the parameter and what is valid).
    """
    cls = COMPRESSORS.get(name)
    if cls is None:
        raise ConfigError(
            f"unknown compressor {name!r}; valid: {', '.join(available_compressors())}"
        )
    valid = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ConfigError(
            f"compressor {name!r} has no parameter {unknown[0]!r};"
            f" valid: {', '.join(valid) or 'none'}"
        )
    return cls(**params)
