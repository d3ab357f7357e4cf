"""``privacy.max_epsilon``: a run that would spend more is refused before any file is written,
naming the most epochs that fit; an extended run stops at the budget and its summary says so
(the refusals of resumes and the exit code of a stop: tests/cli/test_privacy_budget_processes.py).
Every record carries the epsilon spent so far, mid-epoch ones included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.run.variants import write_run_config
from vfl.cli import BUDGET_STOPPED, main

DELTA = 1e-5
MULTIPLIER = 4.0
NOISE = (f"privacy.gradient_noise.noise_multiplier={MULTIPLIER}",)


def _label_epsilon(epochs: int) -> float:
    """Independently: dp-accounting's PLD accountant for K epochs of 3 Gaussian releases each
    (three parties, a concatenating head: a row of its own to each), sensitivity 2C, noise zC."""
    from dp_accounting import GaussianDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    from vfl.privacy.pld import discretization

    if epochs == 0:
        return 0.0
    releases = ((MULTIPLIER, 2.0, 3 * epochs),)
    accountant = PLDAccountant(value_discretization_interval=discretization(releases))
    accountant.compose(GaussianDpEvent(MULTIPLIER / 2.0), 3 * epochs)
    return float(accountant.get_epsilon(DELTA))


BUDGET = (_label_epsilon(2) + _label_epsilon(3)) / 2
"""Two epochs fit, three do not."""


def _sets(*overrides: str) -> list[str]:
    return [arg for item in overrides for arg in ("--set", item)]


def _summary(run_dir: Path) -> dict[str, object]:
    summary: dict[str, object] = json.loads((run_dir / "summary.json").read_text())
    return summary


def test_a_run_planned_beyond_its_budget_is_refused_before_any_file_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: 4 planned epochs, a budget of 2
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"

    # Execute
    status = main(
        [
            "run",
            str(config),
            "--run-dir",
            str(run_dir),
            *_sets(*NOISE, f"privacy.max_epsilon={BUDGET}", "train.epochs=4"),
        ]
    )

    # Assert
    error = capsys.readouterr().err
    assert status == 2
    assert "privacy.max_epsilon" in error
    assert "at most 2 epochs fit (--set train.epochs=2)" in error
    assert f"label_epsilon {_label_epsilon(4):.4g}" in error
    assert not run_dir.exists()


def test_a_budget_that_fits_not_one_epoch_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: PBM's epsilon of one epoch is far above 0.01
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"
    pbm = ("privacy.mechanism=pbm", "model.head.fusion=sum", "model.bottom.output_activation=tanh")

    # Execute
    status = main(
        ["run", str(config), "--run-dir", str(run_dir), *_sets(*pbm, "privacy.max_epsilon=0.01")]
    )

    # Assert
    assert status == 2
    assert "not even 1 epoch fits" in capsys.readouterr().err
    assert not run_dir.exists()


def test_a_budget_without_a_mechanism_that_spends_it_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"

    # Execute
    status = main(["run", str(config), "--run-dir", str(run_dir), *_sets("privacy.max_epsilon=3")])

    # Assert
    assert status == 2
    assert "privacy.max_epsilon" in capsys.readouterr().err
    assert not run_dir.exists()


def test_an_extended_run_stops_at_the_budget_and_its_summary_says_so(tmp_path: Path) -> None:
    # Prepare: the negative control first: 1 epoch within a budget of 2 says it is within it
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"
    budget = (*NOISE, f"privacy.max_epsilon={BUDGET}")
    status = main(
        [
            "run",
            str(config),
            "--run-dir",
            str(run_dir),
            "--quiet",
            *_sets(*budget, "train.epochs=1"),
        ]
    )
    assert status == 0
    first = _summary(run_dir)["privacy"]
    assert isinstance(first, dict)
    assert first["budget"]["stopped"] is False
    assert first["budget"]["message"].startswith("within the budget")

    # Execute: extend it to 4 epochs
    status = main(["run", "--resume", str(run_dir), "--quiet", *_sets("train.epochs=4")])

    # Assert: it trained one more epoch, no further, and says why where the metrics agree
    assert status == BUDGET_STOPPED
    summary = _summary(run_dir)
    section = summary["privacy"]
    assert isinstance(section, dict)
    assert section["budget"]["stopped"] is True
    assert section["budget"]["max_epochs"] == 2
    assert section["budget"]["message"].startswith(
        "stopped at the privacy budget after 2 of 4 planned epochs"
    )
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert max(r["epoch"] for r in records) == summary["epochs"] == 2
    assert section["label_epsilon"] == pytest.approx(_label_epsilon(2), rel=1e-6)
    assert section["label_epsilon"] <= BUDGET


def test_mid_epoch_records_carry_the_epsilon_spent_so_far(tmp_path: Path) -> None:
    # Prepare: 10 rounds per epoch, an evaluation every 4 rounds
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"

    # Execute
    status = main(
        [
            "run",
            str(config),
            "--run-dir",
            str(run_dir),
            "--quiet",
            *_sets(*NOISE, "train.epochs=2", "train.eval_every=4"),
        ]
    )

    # Assert: from an epoch's first round on, its samples count as released once more
    assert status == 0
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    spent = {r["round"]: r["label_epsilon"] for r in records}
    assert spent[0] == 0.0
    assert spent[4] == spent[8] == spent[10] == pytest.approx(_label_epsilon(1), rel=1e-6)
    assert spent[12] == spent[16] == spent[20] == pytest.approx(_label_epsilon(2), rel=1e-6)
    assert spent[4] > 0.0


def test_raising_the_budget_lets_the_extended_run_go_on(tmp_path: Path) -> None:
    # Prepare: the negative control of the stop: a resumed run whose new budget fits 4 epochs
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"
    main(
        [
            "run",
            str(config),
            "--run-dir",
            str(run_dir),
            "--quiet",
            *_sets(*NOISE, f"privacy.max_epsilon={BUDGET}", "train.epochs=2"),
        ]
    )

    # Execute: the same extension as above, with a new budget that fits 4 epochs
    status = main(
        [
            "run",
            "--resume",
            str(run_dir),
            "--quiet",
            *_sets("train.epochs=4", f"privacy.max_epsilon={_label_epsilon(4) * 1.01}"),
        ]
    )

    # Assert
    assert status == 0
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert max(r["epoch"] for r in records) == 4
    section = _summary(run_dir)["privacy"]
    assert isinstance(section, dict)
    assert section["budget"]["stopped"] is False
