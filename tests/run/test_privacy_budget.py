"""``privacy.max_epsilon``: a run that would spend more is refused before any file is written,
naming the most epochs that fit; an extended run stops at the budget and its summary says so."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tests.run.variants import write_run_config
from vfl.cli import main
from vfl.privacy.accountant import RdpAccountant

DELTA = 1e-5
MULTIPLIER = 4.0
NOISE = (f"privacy.gradient_noise.noise_multiplier={MULTIPLIER}",)


def _label_epsilon(epochs: int) -> float:
    """Independently: K epochs of a Gaussian of sensitivity 2C and noise zC, in closed-form RDP
    (K α 2² / (2 z²)) converted at DELTA (Mironov 2017, Proposition 3), over vfl's orders."""
    orders = np.asarray([a for a in RdpAccountant().orders if math.isfinite(a)])
    rdp = epochs * orders * 2.0**2 / (2 * MULTIPLIER**2)
    return float(np.min(rdp + math.log(1 / DELTA) / (orders - 1)))


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
    # Prepare: the negative control first: 2 epochs fit and the run says it is within budget
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"
    budget = (*NOISE, f"privacy.max_epsilon={BUDGET}")
    status = main(
        [
            "run",
            str(config),
            "--run-dir",
            str(run_dir),
            "--quiet",
            *_sets(*budget, "train.epochs=2"),
        ]
    )
    assert status == 0
    first = _summary(run_dir)["privacy"]
    assert isinstance(first, dict)
    assert first["budget"]["stopped"] is False
    assert first["budget"]["message"].startswith("within the budget")

    # Execute: extend it to 4 epochs
    status = main(["run", "--resume", str(run_dir), "--quiet", *_sets("train.epochs=4")])

    # Assert: it trained no further epoch, and says why
    assert status == 0
    summary = _summary(run_dir)
    section = summary["privacy"]
    assert isinstance(section, dict)
    assert section["budget"]["stopped"] is True
    assert section["budget"]["max_epochs"] == 2
    assert section["budget"]["message"].startswith(
        "stopped at the privacy budget after 2 of 4 planned epochs"
    )
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert max(r["epoch"] for r in records) == 2
    assert section["label_epsilon"] == pytest.approx(_label_epsilon(2), rel=1e-9)
    assert section["label_epsilon"] <= BUDGET


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

    # Execute
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
