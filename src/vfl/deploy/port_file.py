"""The file through which a server started on port 0 tells its parties where it listens.

``vfl launch`` starts the server and every party at once: each party loads its modules and its
tables while the server loads its own, then waits here for the port.
"""

from __future__ import annotations

import time
from pathlib import Path

from vfl.errors import ProtocolError

POLL_S = 0.02


def read_port(path: Path) -> int | None:
    """The port written in ``path``, or None while the file is absent or not yet complete."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    if not text.endswith("\n") or not text.strip().isdigit():
        return None
    return int(text)


def wait_for_port(path: Path, timeout_s: float) -> int:
    """The port written in ``path``, once it is there.

    Raises:
        ProtocolError: if no port appears within ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while (port := read_port(path)) is None:
        if time.monotonic() > deadline:
            raise ProtocolError(f"no server port appeared in {path} within {timeout_s:g} s")
        time.sleep(POLL_S)
    return port
