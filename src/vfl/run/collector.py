"""The garbage collector around a process's one big import (torch, pandas and vfl).

With torch imported, each of Python's full collections walks some 370,000 objects (about 0.1 s
on the 2-core reference machine), and importing torch, pandas and vfl triggers several. A
process that imports them once and keeps them until it exits need never walk them:
``imports_frozen`` turns the collector off while they import, then moves every object alive into
the permanent generation (``gc.freeze``), which collections skip, and turns it on again. Used by
the ``vfl`` command's own process and by ``vfl launch``'s preload before its forks (where a
child's collections then no longer write to the memory it shares with the launcher, as Python's
documentation of ``gc.freeze`` advises). Not for a library call inside a user's process: frozen
objects are never collected as cycles.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def imports_frozen(active: bool = True) -> Iterator[None]:
    """The collector off inside, everything alive frozen after (nothing at all unless ``active``).

    Example:
        >>> import gc
        >>> before = gc.get_freeze_count()
        >>> with imports_frozen():
        ...     gc.isenabled()
        False
        >>> gc.isenabled(), gc.get_freeze_count() >= before
        (True, True)
        >>> gc.unfreeze()
    """
    if not active:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
