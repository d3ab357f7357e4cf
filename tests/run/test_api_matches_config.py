"""``vfl.simulate()`` with the user's modules builds the same run as ``vfl run`` of the config.

For every protocol variant, the API (given modules equal to the config's) and the command line
give identical ledgers and identical parameters: the Python API cannot ignore a setting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import vfl
from tests.run.variants import (
    VARIANTS,
    assert_same_ledger,
    assert_same_state,
    ledger_rows,
    write_run_config,
)
from vfl.cli import main
from vfl.config import load_config
from vfl.run.data import prepare
from vfl.run.models import ConfigModels, embedding_width

EPOCHS = 2


def api_session(config_path: Path, overrides: list[str]) -> vfl.Session:
    """The run through ``vfl.simulate``: the user's own modules, equal to the config's."""
    config = load_config(config_path, overrides)
    _, _, data = prepare(config)
    models = ConfigModels(config)
    bottoms = [models.bottom(p, x) for p, x in enumerate(data.train_blocks, start=1)]
    widths = [embedding_width(b, x) for b, x in zip(bottoms, data.train_blocks, strict=True)]
    return vfl.simulate(
        data,
        bottoms=bottoms,
        head=models.head(widths, data.task),
        optimizer=models.optimizer,
        config=config,
    )


def parameters(state: dict[str, Any]) -> dict[str, Any]:
    """Every role's model and optimizer state in a session checkpoint."""
    return {
        "server": state["trainer"]["server"],
        "parties": {p: (s["model"], s["optimizer"]) for p, s in state["parties"].items()},
    }


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_simulate_matches_vfl_run(tmp_path: Path, variant: str) -> None:
    # Prepare
    config = write_run_config(tmp_path)
    overrides = [*VARIANTS[variant], f"train.epochs={EPOCHS}"]
    run_dir = tmp_path / "run"

    # Execute
    sets = [arg for item in overrides for arg in ("--set", item)]
    assert main(["run", str(config), "--run-dir", str(run_dir), *sets]) == 0
    session = api_session(config, overrides)
    vfl.fit(session, epochs=EPOCHS, progress=False)

    # Assert
    from_cli = torch.load(run_dir / "checkpoint.pt", weights_only=True)["session"]
    assert_same_state(parameters(from_cli), parameters(session.state_dict()))
    api_rows = [tuple(row) for row in session.ledger.state_dict()["rows"]]
    cli_rows = ledger_rows((run_dir / "ledger.csv").read_text())
    assert api_rows == cli_rows


def test_the_comparison_sees_a_setting_the_api_drops(tmp_path: Path) -> None:
    # Prepare: a negative control: the API run without the variant's settings
    config = write_run_config(tmp_path)
    overrides = [*VARIANTS["active-party"], f"train.epochs={EPOCHS}"]
    sets = [arg for item in overrides for arg in ("--set", item)]
    assert main(["run", str(config), "--run-dir", str(tmp_path / "run"), *sets]) == 0

    # Execute
    session = api_session(config, [f"train.epochs={EPOCHS}"])
    vfl.fit(session, epochs=EPOCHS, progress=False)

    # Assert: the active party's exchanges cost no bytes through the config, and do here
    api_rows = [tuple(row) for row in session.ledger.state_dict()["rows"]]
    with pytest.raises(AssertionError):
        assert_same_ledger(ledger_rows((tmp_path / "run/ledger.csv").read_text()), api_rows, 0)
