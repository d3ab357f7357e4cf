"""Terminal: its write lock exists before any signal handler can interrupt its making."""

from __future__ import annotations

import subprocess
import sys

import pytest

LOCK_MADE = (
    "import sys\n"
    "from tqdm import tqdm\n"
    "from vfl.run.progress import Terminal\n"
    "if sys.argv[1] == 'terminal':\n"
    "    Terminal()\n"
    "print('_lock' in vars(tqdm))\n"
)


@pytest.mark.parametrize(
    ("made", "has_lock"),
    [("terminal", True), ("nothing", False)],  # the control: importing alone makes no lock
)
def test_a_terminal_makes_tqdms_write_lock_when_it_is_made(made: str, has_lock: bool) -> None:
    # Execute: a fresh interpreter, where nothing has written through tqdm yet
    done = subprocess.run(
        [sys.executable, "-c", LOCK_MADE, made], capture_output=True, text=True, check=True
    )

    # Assert: made before a command installs its signal handlers, not at its first note (where a
    # Ctrl-C during its import of multiprocessing left tqdm without a lock: an internal error)
    assert done.stdout.strip() == str(has_lock)
