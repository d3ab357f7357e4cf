"""Training with the configured attack watching: ``vfl attack``, ``vfl run`` and sweeps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from vfl.attacks.probe import AttackProbe
from vfl.config import RunConfig
from vfl.config.attack import NO_ATTACK
from vfl.run import runner
from vfl.run.progress import Progress
from vfl.run.signals import StopRequest


def train(
    config: RunConfig,
    run_dir: Path,
    *,
    resume: bool = False,
    stop: StopRequest | None = None,
    on_start: Callable[[], None] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """``vfl.run.runner.train``, with ``[attack]``'s attack observing its role when one is set.

    Its metrics join every epoch's record in ``metrics.jsonl`` (``attack_*``) and the summary
    gains an ``attack`` section.
    """
    probe = AttackProbe(config) if config.attack.name != NO_ATTACK else None
    return runner.train(
        config,
        run_dir,
        resume=resume,
        stop=stop,
        probe=probe,
        on_start=on_start,
        progress=progress,
    )
