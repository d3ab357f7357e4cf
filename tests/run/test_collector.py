"""imports_frozen: the collector off around a process's one big import, its objects frozen after."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_cli import write_config, write_table
from vfl.run.collector import imports_frozen


@pytest.fixture
def no_frozen_objects() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # what a test froze goes back to the collector
    gc.enable()


@pytest.mark.usefixtures("no_frozen_objects")
def test_inside_the_collector_is_off_and_after_everything_alive_is_frozen() -> None:
    # Execute
    with imports_frozen():
        inside = gc.isenabled()
        made = [object() for _ in range(10)]

    # Assert
    assert not inside
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)


@pytest.mark.usefixtures("no_frozen_objects")
def test_an_error_inside_still_turns_the_collector_on_again() -> None:
    # Execute
    with pytest.raises(ImportError), imports_frozen():
        raise ImportError("no such module")

    # Assert
    assert gc.isenabled()


@pytest.mark.usefixtures("no_frozen_objects")
def test_a_collector_that_was_off_stays_off_and_inactive_does_nothing() -> None:
    # Execute
    gc.disable()
    with imports_frozen():
        pass
    stays_off = not gc.isenabled()
    gc.enable()
    frozen_before = gc.get_freeze_count()
    with imports_frozen(active=False):
        inactive_inside = gc.isenabled()

    # Assert
    assert stays_off
    assert inactive_inside and gc.get_freeze_count() == frozen_before


RUN_BY_MAIN = (
    "import gc, sys\n"
    "freezes = []\n"
    "freeze = gc.freeze\n"
    "gc.freeze = lambda: (freezes.append(gc.isenabled()), freeze())\n"
    "from vfl.cli import main\n"
    "own = sys.argv[1] == 'own'\n"
    "sys.argv = ['vfl', *sys.argv[2:]]\n"
    "status = main() if own else main(sys.argv[1:])\n"
    "print(status, len(freezes), gc.isenabled())\n"
)


@pytest.mark.parametrize(
    ("how", "freezes"),
    [
        ("own", 2),  # after its imports, and before it exits (vfl.cli.main)
        ("from-python", 0),  # a call from Python leaves the caller's collector alone
    ],
)
def test_vfl_run_freezes_its_imports_only_in_its_own_process(
    tmp_path: Path, how: str, freezes: int
) -> None:
    # Prepare: a short run
    config = write_config(tmp_path, write_table(tmp_path / "table.csv"))
    run = ["run", str(config), "--run-dir", str(tmp_path / "run"), "--quiet"]

    # Execute: a fresh interpreter, as the vfl script starts one
    done = subprocess.run(
        [sys.executable, "-c", RUN_BY_MAIN, how, *run], capture_output=True, text=True, check=True
    )

    # Assert
    assert done.stdout.split()[-3:] == ["0", str(freezes), "True"]
