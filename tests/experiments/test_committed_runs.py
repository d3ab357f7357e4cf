"""Every committed run is the run its sweep file asks for today.

A default that changes (a new sampler, a new key) must not let ``vfl sweep`` take a run made
with the old behaviour for one made with the new: each finished run's saved config must equal
what its sweep file plans now, so the sweep skips it as done instead of presenting old numbers
under a new setting.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vfl.errors import ConfigError
from vfl.experiments.files import CONFIG, SUMMARY
from vfl.experiments.plan import PlannedRun, plan, run_state
from vfl.experiments.spec import SweepSpec, read_sweep

ROOT = Path(__file__).resolve().parents[2]


def sweeps() -> list[Path]:
    """The sweep files under ``experiments/`` (other TOML files there are run configs)."""
    found = []
    for path in sorted((ROOT / "experiments").glob("*/*.toml")):
        try:
            read_sweep(path)
        except ConfigError:
            continue
        found.append(path)
    return found


def finished(spec: SweepSpec) -> list[PlannedRun]:
    """The planned runs whose folder holds a committed summary."""
    return [run for run in plan(spec) if (spec.folder / run.name / SUMMARY).is_file()]


@pytest.mark.parametrize("sweep", sweeps(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_finished_run_is_what_its_sweep_file_plans_today(sweep: Path) -> None:
    # Prepare
    spec = read_sweep(sweep)

    # Execute
    states = {run.name: run_state(spec.folder / run.name, run.config) for run in finished(spec)}

    # Assert
    assert {name: state for name, state in states.items() if state != "done"} == {}


def test_a_run_made_with_another_sampler_is_not_taken_for_done(tmp_path: Path) -> None:
    # Prepare: the negative control: a PBM run whose saved config lacks the sampler it was drawn
    # with, so today's loader reads it with today's default
    spec = read_sweep(ROOT / "experiments/pbm/mnist_quadrants.toml")
    run = next(r for r in finished(spec) if r.config.privacy.mechanism == "pbm")
    copy = tmp_path / run.name
    shutil.copytree(spec.folder / run.name, copy, ignore=shutil.ignore_patterns("*.pt", "bundle"))
    saved = (copy / CONFIG).read_text(encoding="utf-8")
    (copy / CONFIG).write_text(saved.replace('sampler = "torch"\n', ""), encoding="utf-8")

    # Execute
    state = run_state(copy, run.config)

    # Assert
    assert run_state(spec.folder / run.name, run.config) == "done"
    assert state == "superseded"
