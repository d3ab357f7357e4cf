"""Experiment sweeps: grids of run configs over seeds, mean ± std tables and plots.

``vfl sweep SWEEP.toml`` and ``vfl plot RUN_OR_SWEEP_DIR`` (``docs/experiments.md``) wrap::

    from vfl.experiments import read_sweep, run_sweep, redraw
    result = run_sweep(read_sweep(Path("experiments/examples/adult_lr_sweep.toml")))
    redraw(result.folder, metric="test_auc")
"""

from __future__ import annotations

from vfl.experiments.report import redraw, write_run_plots, write_sweep_report
from vfl.experiments.spec import SweepSpec, read_sweep
from vfl.experiments.sweep import SweepResult, run_sweep

__all__ = [
    "SweepResult",
    "SweepSpec",
    "read_sweep",
    "redraw",
    "run_sweep",
    "write_run_plots",
    "write_sweep_report",
]
