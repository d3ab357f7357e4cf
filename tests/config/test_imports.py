"""The config package stays free of torch: importing it, and building a default config."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parents[2] / "src"


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with this checkout's sources first on the path."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    "code",
    [
        "import vfl.config, sys; assert 'torch' not in sys.modules",
        "import vfl.config.sections, vfl.config.stages, vfl.config.rules, sys;"
        " assert 'torch' not in sys.modules",
        "import sys; from vfl.config import load_config;"
        " load_config(None, ['lightweight.alpha.value=0.1', 'train.epochs=2']);"
        " assert 'torch' not in sys.modules",
    ],
    ids=["package", "modules", "default-config"],
)
def test_config_code_imports_no_torch(code: str) -> None:
    # Execute
    result = run_python(code)

    # Assert
    assert result.returncode == 0, result.stderr


def test_importing_a_section_module_alone_registers_the_rules() -> None:
    # Execute
    result = run_python(
        "from vfl.config.sections import PartitionConfig\n"
        "try:\n"
        "    PartitionConfig(scheme='halves', num_parties=3)\n"
        "except ValueError as error:\n"
        "    assert 'makes 2 parties' in str(error), error\n"
        "else:\n"
        "    raise SystemExit('the partition rule did not run')\n"
    )

    # Assert
    assert result.returncode == 0, result.stderr + result.stdout
