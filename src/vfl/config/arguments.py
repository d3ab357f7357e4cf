"""Numeric command-line arguments, checked against the same range markers as config fields.

Example:
    >>> check_argument("--wait-s", float("nan"), Range(gt=0, le=3600))
    Traceback (most recent call last):
    ...
    vfl.errors.ConfigError: --wait-s must be a finite number in (0, 3600], got nan
"""

from __future__ import annotations

from vfl.config.fields import Range
from vfl.errors import ConfigError

MAX_THREADS = 1024
"""The most CPU threads a process may ask torch for (more fail to start, or take seconds)."""
MAX_WAIT_S = 86400.0
"""The longest wait an argument may ask for: a day."""


def check_argument(flag: str, value: float | None, valid: Range) -> None:
    """Refuse ``value`` of ``flag`` unless it is a finite number within ``valid`` (``None``: unset).

    Raises:
        ConfigError: naming the flag, what is valid and the value.
    """
    if value is not None and not valid.admits(value):
        raise ConfigError(f"{flag} {valid.message(value, type(value))}")
