"""PBM's epsilon counts the other parties' noise only when the server sees nothing but the sum:
with counts sent in the clear each party is protected by its own noise alone (M = 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.run.variants import write_run_config
from vfl.cli import main
from vfl.privacy.budget import EpochBudget
from vfl.privacy.events import PbmEvent

PBM = (
    "privacy.mechanism=pbm",
    "privacy.trials=16",
    "privacy.beta=0.1",
    "model.head.fusion=sum",
    "model.bottom.output_activation=tanh",
    "train.epochs=1",
)


def _epsilon(tmp_path: Path, secure: str) -> float:
    config, run_dir = write_run_config(tmp_path), tmp_path / secure
    sets = [a for item in (*PBM, f"privacy.secure_aggregation={secure}") for a in ("--set", item)]
    assert main(["run", str(config), "--run-dir", str(run_dir), "--quiet", *sets]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    return float(summary["privacy"]["epsilon"])


def _expected(parties: int) -> float:
    """One epoch of one sample's 4-wide embedding (write_run_config's embedding_dim)."""
    event = PbmEvent(trials=16, beta=0.1, parties=parties, dimension=4)
    return EpochBudget(event, 1e-5).epsilon(1)


@pytest.mark.parametrize(("secure", "parties"), [("on", 3), ("off", 1)])
def test_the_reported_epsilon_counts_the_parties_whose_noise_the_server_cannot_remove(
    tmp_path: Path, secure: str, parties: int
) -> None:
    # Execute
    epsilon = _epsilon(tmp_path, secure)

    # Assert
    assert epsilon == pytest.approx(_expected(parties), rel=1e-9)


def test_counts_in_the_clear_cost_more_epsilon_than_a_secure_sum(tmp_path: Path) -> None:
    # Assert: the negative control of the rule: M = 1 is the weaker guarantee
    assert _epsilon(tmp_path, "off") > _epsilon(tmp_path, "on")
