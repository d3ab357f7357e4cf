"""What ``vfl attack`` prints: each attack score's reading in the same table as every epsilon
of the run and what it covers, so a defense that leaves the attack near certain says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.runs import small_config, vfl
from vfl.attacks.reading import auc_reading, format_table, rows


def test_an_auc_is_read_against_a_guess() -> None:
    assert auc_reading(1.0).startswith("NEAR CERTAIN")
    assert auc_reading(0.95).startswith("NEAR CERTAIN")
    assert auc_reading(0.66).startswith("leaks")
    assert auc_reading(0.56) == "weak leak"
    assert auc_reading(0.52) == "near chance (0.5)"
    assert auc_reading(float("nan")) == "not scored"


def test_the_table_puts_every_epsilon_beside_the_scores() -> None:
    # Prepare: a PBM run's summary, whose labels have no protection
    summary = {
        "final": {
            "attack_direction_auc": 1.0,
            "attack_direction_sign": 1.0,
            "attack_norm_auc": 0.66,
            "attack_norm_sign": -1.0,
        },
        "privacy": {
            "epsilon": 19.6,
            "epsilon_coalition": 30.4,
            "threat_model": {"epsilon": "features, against the server alone"},
        },
    }

    # Execute
    table = rows(summary)

    # Assert
    assert table[0] == (
        "label inference, direction AUC",
        "1.000 (sign +)",
        "NEAR CERTAIN: this protection does not stop it",
    )
    assert table[1][1] == "0.660 (sign -)"
    assert ("ε features (PBM)", "19.6", "features, against the server alone") in table
    assert ("ε features, any coalition", "30.4", "") in table
    assert ("ε labels (gradient noise)", "none", "the labels have no DP protection") in table


def test_a_reconstruction_is_read_against_the_guess() -> None:
    guess = rows({"final": {"attack_mse": 0.0537, "attack_mse_prior": 0.0536}, "privacy": {}})
    learned = rows({"final": {"attack_mse": 0.0106, "attack_mse_prior": 0.0536}, "privacy": {}})
    assert guess[0][2] == "no better than a guess"
    assert learned[0][2] == "80 % of the way from a guess to perfect"


def test_vfl_attack_prints_the_reading_beside_the_epsilons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: label inference under PBM, which protects the features and not the labels
    config = small_config(tmp_path)
    sets = [
        *("--set", "attack.name=label_inference", "--set", "attack.party=1"),
        *("--set", "privacy.mechanism=pbm", "--set", "model.head.fusion=sum"),
        *("--set", "model.bottom.output_activation=tanh"),
    ]

    # Execute
    done = vfl(capsys, "attack", str(config), "--run-dir", str(tmp_path / "run"), *sets)

    # Assert: the same table as format_table makes of the summary, epsilons and their reach
    assert done.status == 0, done.err
    assert "label inference, direction AUC" in done.out
    assert "ε features (PBM)" in done.out and "against the server alone" in done.out
    assert "ε features, any coalition" in done.out
    assert "ε labels (gradient noise)" in done.out and "no DP protection" in done.out
    assert "_sign" not in done.out.splitlines()[0]  # the final line leaves the signs to the table
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert format_table(summary) in done.out
