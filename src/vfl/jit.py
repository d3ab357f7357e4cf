"""Optional compilation by numba (the ``fast`` extra), shared by vfl's compiled kernels.

The kernels (bit packing, the lattice quantizer, the PBM sampler) run compiled only where
``usable()``: numba is installed *and* imports. A broken install (one built against another numpy,
say) then falls back to the numpy paths with one warning, instead of failing every message that
would have used a kernel. numba is imported on the first call, not when vfl is imported.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from functools import cache
from typing import Any

log = logging.getLogger(__name__)


@cache
def usable() -> bool:
    """Whether numba is installed and imports (checked once per process)."""
    if importlib.util.find_spec("numba") is None:
        return False
    try:
        import numba  # noqa: F401
    except Exception as error:  # any failure of a broken install, not only ImportError
        log.warning("numba is installed but does not import (%s); using the numpy paths", error)
        return False
    return True


def njit(*functions: Callable[..., Any]) -> tuple[Callable[..., Any], ...]:
    """``functions`` compiled by numba (machine code cached on disk; the GIL released).

    Raises:
        ImportError: if numba is not usable (check ``usable()`` first).
    """
    if not usable():
        raise ImportError("numba is not installed or does not import (pip install 'vfl[fast]')")
    import numba

    jit = numba.njit(cache=True, nogil=True)
    return tuple(jit(function) for function in functions)
