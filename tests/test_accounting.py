from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli import write_config, write_table
from vfl.cli import main
from vfl.results.cvfl_costs import (
    literal_bits_per_round,
    reproduction_bits_per_round,
    time_to_target,
)


def test_reproduction_formula_matches_the_mimic_cost_per_epoch() -> None:
    # spec cvfl.md section 4.3: MIMIC, b=32: 29.326 MiB per epoch (15 rounds)
    bits = reproduction_bits_per_round(
        bits=32, batch=1000, width=16, parties=4, server_parameters=128
    )
    assert 15 * bits / 8 / 2**20 == pytest.approx(29.326, abs=1e-3)


def test_literal_formula_counts_m_plus_one_embedding_transfers() -> None:
    bits = literal_bits_per_round(bits=2, batch=10, widths=[3, 3], server_parameters=7)
    assert bits == 2 * (3 * 10 * 6 + 2 * 7)


def test_time_to_target_reproduces_table_5() -> None:
    # spec cvfl.md section 7: Q=25, 1773.75 mean rounds, t_c = 200 ms -> 798.19 s
    assert time_to_target(
        rounds=1773.75,
        local_steps=25,
        compute_seconds=0.01,
        latency_seconds=0.2,
    ) == pytest.approx(798.19, abs=0.01)


def test_summary_reports_measured_bytes_beside_the_formulas_and_time_to_target(
    tmp_path: Path,
) -> None:
    # Prepare
    config = write_config(tmp_path, write_table(tmp_path / "t.csv"))

    # Execute
    main(
        [
            "run",
            str(config),
            "--run-dir",
            str(tmp_path / "run"),
            "--set",
            "protocol.labels=shared",
            "--set",
            "target.metric=test_accuracy",
            "--set",
            "target.value=0.5",
            "--set",
            "protocol.local_steps=2",
        ]
    )

    # Assert
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    accounting = summary["accounting"]
    assert accounting["measured_bytes_per_round"] > accounting["paper_literal_bytes_per_round"]
    assert accounting["paper_reproduction_bytes_per_round"] > 0
    reached = summary["target"]["reached"]
    assert reached is not None
    times = summary["target"]["time"]["seconds_by_latency_ms"]
    assert times["200"] == pytest.approx(reached["round"] * (2 * 0.010 + 0.2))
    assert list(times) == ["1", "10", "50", "200"]
