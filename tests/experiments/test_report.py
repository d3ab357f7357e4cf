"""Tables, CSVs and plots written from hand-made sweep folders and run directories."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.experiments.sweeps import curve_records, write_hand_sweep, write_run
from vfl.errors import ConfigError
from vfl.experiments.aggregate import Curve, SettingRow, Stat, TargetCost
from vfl.experiments.plots import plot_curves
from vfl.experiments.report import redraw, write_sweep_report
from vfl.experiments.tables import markdown_table
from vfl.results.summary import Target

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_reports_never_import_torch() -> None:
    # Execute: a fresh interpreter imports every report module
    code = (
        "import sys, vfl.experiments.report, vfl.experiments.plots, vfl.experiments.aggregate;"
        " print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    # Assert
    assert out.stdout.strip() == "False"


def test_the_sweep_report_reduces_each_setting_over_its_seeds(tmp_path: Path) -> None:
    # Prepare: setting "slow" has one seed that never reaches 0.7
    curves = {
        "fast": [[0.1, 0.8, 0.9], [0.1, 0.7, 0.8]],
        "slow": [[0.1, 0.5, 0.75], [0.1, 0.4, 0.6]],
    }
    write_hand_sweep(tmp_path, curves, target=("test_accuracy", 0.7))

    # Execute
    written = write_sweep_report(tmp_path)

    # Assert
    assert {p.name for p in written} == {
        "results.csv",
        "table.md",
        "table.csv",
        "test_accuracy_vs_epoch.png",
        "test_accuracy_vs_round.png",
        "test_accuracy_vs_mb.png",
    }
    table = (tmp_path / "table.md").read_text()
    assert (
        "| fast | 2 | 0.8500 ± 0.0500 | 0.8500 ± 0.0500 (2) | 1.00 ± 0.00 | 10.0 ± 0.0 | 2/2 |"
        in table
    )
    assert "| slow | 2 | 0.6750 ± 0.0750 | 0.6750 ± 0.0750 (2) | – | – | 1/2 |" in table
    rows = read_csv(tmp_path / "table.csv")
    assert rows[1]["setting"] == "slow" and rows[1]["train.optimizer.lr"] == "1"
    assert rows[1]["mb_to_target_mean"] == "" and rows[1]["target_reached"] == "1"
    assert float(rows[0]["best_test_accuracy_std"]) == pytest.approx(0.05)
    assert [r["run"] for r in read_csv(tmp_path / "results.csv")] == [
        "s0__seed0",
        "s0__seed1",
        "s1__seed0",
        "s1__seed1",
    ]


def test_unfinished_runs_are_left_out_of_the_report(tmp_path: Path) -> None:
    # Prepare
    write_hand_sweep(tmp_path, {"a": [[0.1, 0.8], [0.1, 0.6]]})
    (tmp_path / "s0__seed1" / "summary.json").unlink()

    # Execute
    write_sweep_report(tmp_path)

    # Assert
    assert "| a | 1 | 0.8000 ± 0.0000 |" in (tmp_path / "table.md").read_text()
    assert len(read_csv(tmp_path / "results.csv")) == 1


def test_another_metric_gets_its_own_table(tmp_path: Path) -> None:
    # Prepare
    write_hand_sweep(tmp_path, {"a": [[0.1, 0.8]]})

    # Execute
    written = redraw(tmp_path, metric="test_loss")

    # Assert
    assert {"table_test_loss.md", "test_loss_vs_mb.png"} <= {p.name for p in written}
    assert "| a | 1 | 0.2000 ± 0.0000 |" in (tmp_path / "table_test_loss.md").read_text()


def test_a_metric_no_run_recorded_is_refused(tmp_path: Path) -> None:
    write_hand_sweep(tmp_path, {"a": [[0.1, 0.8]]})
    with pytest.raises(ConfigError, match=r"metric 'test_f1' is not in the runs' metrics\.jsonl"):
        redraw(tmp_path, metric="test_f1")


def test_a_run_directory_gets_its_plots(tmp_path: Path) -> None:
    # Prepare: plots need only metrics.jsonl, so an unfinished run works too
    run_dir = write_run(tmp_path / "run", curve_records([0.1, 0.5, 0.7]), finished=False)

    # Execute
    written = redraw(run_dir)

    # Assert
    assert [p.name for p in written] == [
        "test_accuracy_vs_epoch.png",
        "test_accuracy_vs_round.png",
        "test_accuracy_vs_mb.png",
    ]
    assert all(p.read_bytes().startswith(PNG_MAGIC) and p.stat().st_size > 5000 for p in written)


def test_redraw_refuses_a_folder_without_results(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="neither a sweep folder"):
        redraw(tmp_path)


@pytest.mark.parametrize("log_x", [False, True])
def test_plots_of_many_settings_are_non_empty_pngs(tmp_path: Path, log_x: bool) -> None:
    # Prepare: more settings than fit an inside legend, one without traffic (no ledger)
    epochs = np.arange(4.0)
    curves = [
        Curve(f"setting {i}", epochs, epochs * (i + 1), 0.5 + 0.1 * epochs, 0.02 + 0 * epochs, 3)
        for i in range(12)
    ]
    curves.append(Curve("centralized", epochs, np.full(4, np.nan), 0.4 + 0 * epochs, 0 * epochs, 1))

    # Execute
    path = plot_curves(
        curves, tmp_path / "p.png", x="megabytes", metric="test_accuracy", title="t", log_x=log_x
    )

    # Assert
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert path.stat().st_size > 10000


def test_the_markdown_table_marks_undefined_cells() -> None:
    # Prepare
    undefined = Stat(float("nan"), float("nan"), 0)
    row = SettingRow("a|b", 0, undefined, undefined, -1, TargetCost(0, 0, None, None))

    # Execute
    table = markdown_table([row], title="t", metric="test_loss", target=Target("test_loss", 0.3))

    # Assert
    assert "| setting | seeds | best test_loss | max test_loss reached (epoch) |" in table
    assert "MB to test_loss ≤ 0.3" in table
    assert "| a\\|b | 0 | – | – | – | – | 0/0 |" in table


def test_runs_that_record_bottom_flops_also_get_a_plot_against_compute(tmp_path: Path) -> None:
    # Prepare
    records = curve_records([0.1, 0.5, 0.7])
    for index, record in enumerate(records):
        record["bottom_flops"] = 3e9 * index
    run_dir = write_run(tmp_path / "run", records, finished=False)

    # Execute
    written = redraw(run_dir)

    # Assert
    assert written[-1].name == "test_accuracy_vs_gflops.png"
    assert written[-1].read_bytes().startswith(PNG_MAGIC)
