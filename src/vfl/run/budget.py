"""``privacy.max_epsilon``: how many epochs a run's privacy budget allows, checked before it starts.

Each mechanism of a composed run spends epsilon once per epoch: PBM on the features (its loop's
``PbmEvent``) and the gradient noise on the labels (``GaussianEvent``). The budget holds for each
of them at ``privacy.delta``; the run may train as many epochs as the tighter one allows.
"""

from __future__ import annotations

from vfl.config import RunConfig
from vfl.errors import ConfigError
from vfl.privacy.budget import EpochBudget
from vfl.privacy.events import PrivacyEvent
from vfl.protocol.base import Trainer
from vfl.protocol.loop import ServerLoop
from vfl.run.fit import EpochLimit


def spending(trainer: Trainer) -> dict[str, PrivacyEvent]:
    """What one epoch of ``trainer`` releases, by the name its epsilon is reported under."""
    if not isinstance(trainer, ServerLoop):
        return {}
    events: dict[str, PrivacyEvent] = {}
    if trainer.options.privacy is not None:
        events["epsilon"] = trainer.options.privacy.event
    if trainer.options.gradient_noise is not None:
        events["label_epsilon"] = trainer.options.gradient_noise.event()
    return events


def epoch_limit(config: RunConfig, trainer: Trainer) -> EpochLimit | None:
    """The most epochs (up to ``train.epochs``) within ``privacy.max_epsilon``; None without one."""
    privacy = config.privacy
    if privacy.max_epsilon == 0:
        return None
    limit = config.train.epochs
    for event in spending(trainer).values():
        limit = EpochBudget(event, privacy.delta).max_epochs(privacy.max_epsilon, limit=limit)
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
    delta = config.privacy.delta
    spent = ", ".join(
        f"{name} {EpochBudget(event, delta).epsilon(config.train.epochs):.4g}"
        for name, event in spending(trainer).items()
    )
    fits = (
        f"at most {limit.epochs} epochs fit (--set train.epochs={limit.epochs})"
        if limit.epochs
        else "not even 1 epoch fits (raise privacy.max_epsilon, or add noise)"
    )
    raise ConfigError(
        f"privacy.max_epsilon: {config.train.epochs} epochs would spend {spent} at delta"
        f" {delta:g}, over the budget of {config.privacy.max_epsilon:g}; {fits}"
    )
