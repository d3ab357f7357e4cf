"""``vfl launch --resume`` equals ``vfl run --resume``: an edited RUN.toml or PARTY.toml is refused
naming the changed keys, and nothing of the run changes; more epochs are applied and recorded.

Real processes: one deployment trains one epoch, then each case resumes it with one edit, which
it undoes afterwards (a refused resume changes nothing, as each case asserts); the extension,
which does change the run, comes last.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.runs import snapshot
from tests.deploy.scenario import Scenario, make_scenario, run_launch


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """A one-party deployment that trained one epoch with lr 0.02."""
    root = tmp_path_factory.mktemp("deployed-resume")
    scenario = make_scenario(root / "d", num_parties=1, rows=(120, 40), epochs=1)
    result = run_launch(scenario)
    assert result.returncode == 0, result.stderr
    return scenario


def run_files(scenario: Scenario) -> dict[str, bytes]:
    """The run folder and the parties' state, but for the logs every attempt appends to."""
    files = snapshot(scenario.root)
    return {k: v for k, v in files.items() if "logs/" not in k and not k.endswith(".log")}


@contextmanager
def edited(path: Path, old: str, new: str) -> Iterator[None]:
    """``path`` with ``old`` replaced by ``new`` while the block runs."""
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    try:
        yield
    finally:
        path.write_text(text)


def test_an_edited_learning_rate_in_run_toml_is_refused_naming_it(
    trained: Scenario,
) -> None:
    # Prepare: lr 0.02 -> 0.5 in RUN.toml (the edit `vfl run --resume` refuses)
    before = run_files(trained)

    # Execute
    with edited(trained.run_toml, "lr = 0.02", "lr = 0.5"):
        result = run_launch(trained, "--resume")

    # Assert: refused by the server, naming the key, its values and the file; nothing changed
    assert result.returncode == 2
    assert "train.optimizer.lr (0.02 -> 0.5)" in result.stderr
    assert "run.toml" in result.stderr and "Traceback" not in result.stderr
    assert run_files(trained) == before


def test_a_learning_rate_given_with_set_is_refused_too(trained: Scenario) -> None:
    # Prepare
    before = run_files(trained)

    # Execute
    result = run_launch(trained, "--resume", "--set", "train.optimizer.lr=0.5")

    # Assert
    assert result.returncode == 2
    assert "train.optimizer.lr (0.02 -> 0.5)" in result.stderr
    assert run_files(trained) == before


def test_an_edited_party_toml_is_refused_by_that_party_naming_the_key(
    trained: Scenario,
) -> None:
    # Prepare: party 1 would train on one column instead of two
    before = run_files(trained)

    # Execute
    with edited(
        trained.party_tomls[1], 'id_column = "id"', 'id_column = "id"\ncolumns = ["income"]'
    ):
        result = run_launch(trained, "--resume")

    # Assert: every file as it was; the one addition is the server's record of why it stopped
    # (vfl launch stops it once party 1 refused)
    assert result.returncode == 2
    assert "party-1 exited with status 2" in result.stderr
    assert "data.columns ([] -> ['income'])" in result.stderr
    after = run_files(trained)
    error = after.pop("run/error.txt", b"")
    assert after == before
    assert error in (b"", b"stopped by SIGTERM while waiting for parties 1 to connect\n")


def test_more_epochs_are_applied_and_recorded(trained: Scenario) -> None:
    # Prepare: the negative control: an unedited resume with the documented extension
    scenario = trained

    # Execute
    result = run_launch(scenario, "--resume", "--set", "train.epochs=2")

    # Assert: a second epoch trained, and config.toml says so
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in (scenario.run_dir / "metrics.jsonl").open()]
    assert max(int(r["epoch"]) for r in records) == 2
    assert "epochs = 2" in (scenario.run_dir / "config.toml").read_text()
