"""``vfl --version`` names the installed package's version, from its metadata."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys


def test_version_prints_the_package_metadata_s_version() -> None:
    # Prepare
    expected = f"vfl {importlib.metadata.version('vfl')}\n"

    # Execute
    done = subprocess.run(
        [sys.executable, "-m", "vfl.cli", "--version"], capture_output=True, text=True
    )

    # Assert
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected and expected != "vfl \n"
