"""``privacy.max_epsilon``: how many epochs a run's privacy budget allows, checked before it starts.

Each mechanism of a composed run spends epsilon once per epoch: PBM on the features (its loop's
``PbmEvent``) and the gradient noise on the labels (``GaussianEvent`` releases). The budget holds
for each of them at ``privacy.delta``; the run may train as many epochs as the tighter one allows.
The epsilon checked is the one the run reports (``vfl.privacy.budget``: the same computation).
"""

from __future__ import annotations

from dataclasses import dataclass

from vfl.config import RunConfig
from vfl.errors import ConfigError
from vfl.privacy.budget import Spending
from vfl.protocol.base import Trainer
from vfl.protocol.loop import ServerLoop
from vfl.protocol.private_sum import PrivateSumTraining
from vfl.run.fit import EpochLimit


@dataclass(frozen=True)
class Checkpointed:
    """Where a checkpoint left a run: epochs done and rounds into the next one.

    Attributes:
        epochs: Epochs completed.
        position: Rounds run of the next epoch (0 at an epoch's end).
    """

    epochs: int
    position: int = 0

    @property
    def started(self) -> int:
        """Epochs with at least one round run (what epsilon has been spent on)."""
        return self.epochs + (self.position > 0)


def budgets(trainer: Trainer) -> dict[str, Spending]:
    """Each epsilon ``trainer`` reports, as a function of the epochs run (its own objects)."""
    if not isinstance(trainer, ServerLoop):
        return {}
    found: dict[str, Spending] = {}
    if isinstance(trainer, PrivateSumTraining):
        found["epsilon"] = trainer.budget
    label = trainer.label_budget()
    if label is not None:
        found["label_epsilon"] = label
    return found


def epoch_limit(config: RunConfig, trainer: Trainer) -> EpochLimit | None:
    """The most epochs (up to ``train.epochs``) within ``privacy.max_epsilon``; None without one."""
    privacy = config.privacy
    if privacy.max_epsilon == 0:
        return None
    limit = config.train.epochs
    for budget in budgets(trainer).values():
        limit = budget.max_epochs(privacy.max_epsilon, limit=limit)
    note = f"privacy.max_epsilon = {privacy.max_epsilon:g} at privacy.delta = {privacy.delta:g}"
    return EpochLimit(limit, note)


def check_planned(config: RunConfig, trainer: Trainer) -> EpochLimit | None:
    """The budget of a new run, once its planned epochs are known to fit in it.

    Raises:
        ConfigError: naming the largest number of epochs that fits, when ``train.epochs``
            would spend more than ``privacy.max_epsilon``.
    """
    limit = epoch_limit(config, trainer)
    if limit is None or limit.epochs >= config.train.epochs:
        return limit
    fits = (
        f"at most {limit.epochs} epochs fit (--set train.epochs={limit.epochs})"
        if limit.epochs
        else "not even 1 epoch fits (raise privacy.max_epsilon, or add noise)"
    )
    raise ConfigError(
        f"privacy.max_epsilon: {config.train.epochs} epochs would spend"
        f" {_spent(config, trainer, config.train.epochs)}, over the budget of"
        f" {config.privacy.max_epsilon:g}; {fits}"
    )


def check_resumable(config: RunConfig, trainer: Trainer, done: Checkpointed) -> EpochLimit | None:
    """The budget of a resumed or extended run, once it is shown to fit at least one more round.

    Raises:
        ConfigError: naming the epsilon already spent and the budget, when the run has spent
            more than ``privacy.max_epsilon`` already, or when its next epoch would (with more
            epochs planned).
    """
    limit = epoch_limit(config, trainer)
    if limit is None:
        return None
    budget = config.privacy.max_epsilon
    started = done.started
    over = [
        name for name, spending in budgets(trainer).items() if spending.epsilon(started) > budget
    ]
    spent = _spent(config, trainer, started)
    if over:
        raise ConfigError(
            f"privacy.max_epsilon: the run has already spent {spent} in {started} epochs, over"
            f" the budget of {budget:g}; it cannot go on within it (nothing was changed)"
        )
    if done.position == 0 and config.train.epochs > done.epochs >= limit.epochs:
        raise ConfigError(
            f"privacy.max_epsilon: the run has spent {spent} in {started} epochs, and epoch"
            f" {started + 1} would spend {_spent(config, trainer, started + 1, delta=False)}, over"
            f" the budget of {budget:g}: no further epoch fits (nothing was changed)"
        )
    return limit


def _spent(config: RunConfig, trainer: Trainer, epochs: int, *, delta: bool = True) -> str:
    """``label_epsilon 11.61 at delta 1e-05``: each epsilon after ``epochs`` epochs."""
    figures = ", ".join(
        f"{name} {spending.epsilon(epochs):.4g}" for name, spending in budgets(trainer).items()
    )
    return f"{figures} at delta {config.privacy.delta:g}" if delta else figures
