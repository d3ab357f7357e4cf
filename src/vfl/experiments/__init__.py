"""Experiment sweeps: grids of run configs over seeds, mean ± std tables and plots.

``vfl sweep SWEEP.toml`` and ``vfl plot RUN_OR_SWEEP_DIR`` (``docs/experiments.md``) wrap::

    from vfl.experiments import read_sweep, run_sweep, redraw
    result = run_sweep(read_sweep(Path("experiments/examples/adult_lr_sweep.toml")))
    redraw(result.folder, metric="test_auc")
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SweepResult": "vfl.experiments.sweep",
    "SweepSpec": "vfl.experiments.spec",
    "read_sweep": "vfl.experiments.spec",
    "redraw": "vfl.experiments.report",
    "run_sweep": "vfl.experiments.sweep",
    "write_run_plots": "vfl.experiments.report",
    "write_sweep_report": "vfl.experiments.report",
}
"""Loaded on first use: the command line imports this package, and plotting loads slowly."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vfl.experiments' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
