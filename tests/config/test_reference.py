"""The generated reference shows plain types and each field's declared range."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parents[2]


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_config_doc", ROOT / "tools/gen_config_doc.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_shows_plain_types_and_declared_ranges() -> None:
    # Prepare
    generator = load_generator()

    # Execute
    page = generator.render()

    # Assert
    assert "Annotated" not in page
    assert "| `epochs` | `int` | `5` | `>= 1` |" in page
    assert "| `test_fraction` | `float` | `0.2` | `(0, 1)` |" in page
    assert "| `bits` | `int` | `32` | `1..32` |" in page
    assert "| `momentum` | `float` | `0.0` | `[0, 1)` |" in page
