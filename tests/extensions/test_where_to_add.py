"""docs/architecture.md's "Where to add X" table names the one file of each registration.

For each row: the named file registers every built-in entry of that registry (so it is where a
new one goes), the registration function is the registry's, and the toy extension of that kind
in ``tests/extensions`` uses the same function (so the table's recipe is the one the toy runs
through ``vfl run``/``vfl attack``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vfl.compress.registry import COMPRESSORS, register_compressor
from vfl.config.attack import ATTACKS, register_attack
from vfl.config.mechanisms import MECHANISMS, register_mechanism
from vfl.config.protocols import PROTOCOLS, register_protocol
from vfl.data.registry import DATASETS, register_dataset
from vfl.registry import Registry
from vfl.schedules import SCHEDULES
from vfl.schedules.kinds import register_schedule

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs/architecture.md"
REGISTRATIONS: dict[str, tuple[Callable[..., Any], Registry[Any], str]] = {
    "register_compressor": (register_compressor, COMPRESSORS, "toy_compressor.py"),
    "register_schedule": (register_schedule, SCHEDULES, ""),
    "register_protocol": (register_protocol, PROTOCOLS, ""),
    "register_attack": (register_attack, ATTACKS, "toy_attack.py"),
    "register_mechanism": (register_mechanism, MECHANISMS, ""),
    "register_dataset": (register_dataset, DATASETS, "toy_dataset.py"),
}
"""Each registration function the table may name: the function, its registry, its toy."""


def _rows() -> list[dict[str, str]]:
    text = DOC.read_text()
    table = text.split("<!-- where-to-add:start -->\n")[1].split("<!-- where-to-add:end -->")[0]
    lines = [line for line in table.strip().splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    return [dict(zip(header, row, strict=True)) for row in cells]


def _code(cell: str) -> str:
    found = re.search(r"`([^`]+)`", cell)
    return found.group(1) if found else ""


def _builtin_tokens(registry: Registry[Any], name: str) -> tuple[str, ...]:
    entry = registry[name]
    tokens = [f'"{name}"']
    if isinstance(entry, type):
        tokens.append(entry.__name__)
    return tuple(tokens)


ROWS = _rows()


def test_the_table_covers_every_extension_point() -> None:
    # Execute
    kinds = [row["to add a"] for row in ROWS]

    # Assert
    expected = ["compressor", "protocol", "attack", "privacy mechanism", "data set", "transport"]
    assert set(expected) <= set(kinds)


@pytest.mark.parametrize("row", ROWS, ids=[row["to add a"] for row in ROWS])
def test_each_row_names_the_file_that_registers_every_built_in(row: dict[str, str]) -> None:
    # Prepare
    function = _code(row["register it with"])
    path = ROOT / "src/vfl" / _code(row["in (the one file)"])
    text = path.read_text()

    # Execute / Assert
    if not function:  # a transport: a class in the named module, no registry
        assert "class Transport" in text
        return
    registered, registry, _ = REGISTRATIONS[function]
    assert registered.__name__ == function
    assert f"{function}(" in text, f"{path} makes no {function} call"
    for name in registry.names():
        assert any(token in text for token in _builtin_tokens(registry, name)), (
            f"{name!r} is registered, but not in {path}"
        )


@pytest.mark.parametrize(
    "function", [f for f, (_, _, toy) in REGISTRATIONS.items() if toy], ids=str
)
def test_each_toy_extension_registers_as_the_table_says(function: str) -> None:
    # Prepare
    toy = Path(__file__).parent / REGISTRATIONS[function][2]
    named = [_code(row["register it with"]) for row in ROWS]

    # Execute
    text = toy.read_text()

    # Assert
    assert function in named
    assert f"{function}(" in text
