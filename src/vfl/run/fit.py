"""The epoch loop shared by every protocol: train, evaluate, record, checkpoint."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from vfl.errors import ConfigError
from vfl.protocol.base import Trainer
from vfl.results.files import LEDGER, SUMMARY, RunDirectory
from vfl.results.summary import Target, summarize
from vfl.run.console import describe, describe_untrained
from vfl.run.progress import Progress, Terminal
from vfl.run.session import PartyGroup, Session
from vfl.run.signals import RunStopped as RunStopped  # its home before run/signals.py
from vfl.run.signals import StopRequest
from vfl.wire import SPLIT_TEST


@dataclass(frozen=True)
class Schedule:
    """When to evaluate and when to stop.

    Attributes:
        epochs: Epochs to train.
        eval_at_start: Record the untrained model first (epoch 0, no traffic).
        eval_every: Also evaluate every this many rounds inside epochs (0: after epochs only).
        target: The target the summary reports the cost of.
        stop_at_target: Stop as soon as an evaluation meets ``target``.
        budget: The privacy budget: training stops before an epoch it does not allow.
    """

    epochs: int
    eval_at_start: bool = True
    eval_every: int = 0
    target: Target | None = None
    stop_at_target: bool = False
    budget: EpochLimit | None = None


@dataclass(frozen=True)
class EpochLimit:
    """The most epochs a privacy budget allows, and what the summary says about it.

    Attributes:
        epochs: The largest number of epochs within the budget.
        note: What the budget is (``privacy.max_epsilon = 5 at delta = 1e-05``).
    """

    epochs: int
    note: str


@dataclass(frozen=True)
class Checkpoints:
    """When to write a checkpoint, and what it records besides the state.

    Attributes:
        enabled: Write checkpoints at all (after every epoch, at least).
        every: Also every this many rounds within epochs (0: at epoch ends only).
        config: The run's resolved config (TOML), kept in the checkpoint so that a resume can
            tell which fields changed since.
    """

    enabled: bool = True
    every: int = 0
    config: str = ""


class _TargetReached(Exception):
    """Raised from inside an epoch to stop training at the target."""


def fit(
    session: Session[PartyGroup],
    *,
    epochs: int,
    run: RunDirectory | None = None,
    progress: bool | Progress = True,
    checkpoint: bool = True,
    resume: bool = False,
    eval_at_start: bool = True,
    eval_every: int = 0,
    target: Target | None = None,
    stop_at_target: bool = False,
    checkpoint_every: int = 0,
    config: str = "",
    stop: StopRequest | None = None,
    budget: EpochLimit | None = None,
) -> list[dict[str, Any]]:
    """Train for ``epochs`` epochs, evaluating on the test split after each (and in between).

    With a run directory, records go to ``metrics.jsonl`` and a checkpoint is written after every
    epoch, and every ``checkpoint_every`` rounds within epochs; with ``resume``, training
    continues exactly where the checkpoint left off, mid-epoch included. ``config`` (the
    resolved config as TOML) is stored in every checkpoint.
    With ``eval_at_start``, a fresh run first records epoch 0: the untrained model, no traffic.
    ``eval_every`` adds evaluations every that many rounds (their ``epoch`` is fractional).
    ``target`` adds rounds, bytes and time to reach a metric value to the summary, and with
    ``stop_at_target`` training ends at the first evaluation that meets it.
    Once ``stop`` is requested, training ends after the current round with a checkpoint.
    ``progress`` shows the work: ``True`` a bar of each epoch's rounds (on a terminal) and a
    line per epoch on standard error, ``False`` nothing, or a ``Progress`` of the caller's.
    With a ``budget``, no epoch beyond ``budget.epochs`` starts (a resumed or extended run stops
    there, and its summary says so). A session's probe adds its metrics to each epoch's record.

    Returns:
        One metrics record per evaluation (all epochs, including resumed ones).

    Raises:
        RunStopped: if ``stop`` was requested (no summary is written: the run is unfinished).
    """
    if stop_at_target and target is None:
        raise ConfigError("stopping at the target needs a target (target.metric)")
    schedule = Schedule(epochs, eval_at_start, eval_every, target, stop_at_target, budget)
    checkpoints = Checkpoints(checkpoint and run is not None, checkpoint_every, config)
    if not isinstance(progress, Progress):
        progress = Terminal(bar=progress, lines=progress)
    return _Fit(session, schedule, run, progress, checkpoints, stop).run(resume)


class _Fit:
    def __init__(
        self,
        session: Session[PartyGroup],
        schedule: Schedule,
        run: RunDirectory | None,
        progress: Progress,
        checkpoints: Checkpoints,
        stop: StopRequest | None,
    ) -> None:
        self.session = session
        self.trainer: Trainer = session.trainer
        self.schedule = schedule
        self.run_files = run
        self.progress = progress
        self.checkpoints = checkpoints
        self.stop = stop or StopRequest()
        self.records: list[dict[str, Any]] = []
        self.earlier = 0.0  # wall time of the run before a resume
        self.started = time.perf_counter()
        self.epoch_started = self.started
        self.epoch_wall_started = 0.0  # ``elapsed`` when the current epoch started
        self.eval_seconds = 0.0
        self.position = 0  # rounds done in the current epoch
        self.loss_sum = 0.0  # their training losses, summed in order
        self.saved_at = -1  # the round of the last checkpoint written or loaded
        self.stopped_by_budget = False

    @property
    def elapsed(self) -> float:
        """Wall time of the run so far, across resumes."""
        return self.earlier + time.perf_counter() - self.started

    def run(self, resume: bool) -> list[dict[str, Any]]:
        start_epoch = self._resume() if resume else 0
        self.records = self.run_files.read_metrics() if self.run_files is not None else []
        self.trainer.setup()
        try:
            if self.schedule.eval_at_start and start_epoch == 0 and self.position == 0:
                started = self.elapsed
                self._evaluate(None, train_time=0.0)
                self.progress.note(describe_untrained(self.records[-1], self.elapsed - started))
            for epoch in range(start_epoch, self.schedule.epochs):
                self._stop_if_requested(epoch)
                if self._over_budget(epoch):
                    break
                self._epoch(epoch)
        except _TargetReached:
            pass
        if self.run_files is not None:
            summary = summarize(self.records, target=self.schedule.target)
            self._summarize_extras(summary)
            self.run_files.write_json(SUMMARY, summary)
            if self.trainer.ledger is not None:
                self.trainer.ledger.write_csv(self.run_files.file(LEDGER))
        return self.records

    def _over_budget(self, epoch: int) -> bool:
        """Whether epoch ``epoch`` (0-based) would spend more than the privacy budget."""
        budget = self.schedule.budget
        if budget is None or epoch + 1 <= budget.epochs:
            return False
        self.stopped_by_budget = True  # the command says so, once, from the summary
        return True

    def _summarize_extras(self, summary: dict[str, Any]) -> None:
        budget = self.schedule.budget
        if budget is not None:
            stopped = self.stopped_by_budget
            trained = self.trainer.rounds // len(self.trainer.sampler)  # what the metrics show
            summary.setdefault("privacy", {})["budget"] = {
                "limit": budget.note,
                "max_epochs": budget.epochs,
                "stopped": stopped,
                "message": (
                    f"stopped at the privacy budget after {trained} of"
                    f" {self.schedule.epochs} planned epochs ({budget.note})"
                    if stopped
                    else f"within the budget ({budget.note})"
                ),
            }
        if self.session.probe is not None:
            self.session.probe.summarize(summary)

    def _resume(self) -> int:
        if self.run_files is None:
            raise ConfigError("resuming needs the run directory that holds the checkpoint")
        state = self.run_files.load_checkpoint()
        self.session.load_state_dict(state["session"])
        torch.set_rng_state(state["torch_rng"])
        self.earlier = float(state["elapsed"])
        self.position = int(state.get("position", 0))
        self.loss_sum = float(state.get("epoch_loss", 0.0))
        self.epoch_started -= float(state.get("epoch_seconds", 0.0))
        self.saved_at = self.trainer.rounds
        self.run_files.truncate_metrics(self.trainer.rounds)
        return int(state["epoch"])

    def _epoch(self, epoch: int) -> None:
        start, total = self.position, len(self.trainer.sampler)
        if start == 0:
            self.epoch_started = time.perf_counter()
        self.epoch_wall_started = self.elapsed
        self.eval_seconds = 0.0
        self.progress.epoch_begins(epoch, self.schedule.epochs, total, start)

        def after_round(loss: float) -> None:
            self.loss_sum += loss
            self.position += 1
            self.progress.round_ends(loss)
            every = self.schedule.eval_every
            if every and self.trainer.rounds % every == 0 and self.position < total:
                self._evaluate(None, train_time=self._training_seconds())
            if self.position < total:
                self._within_epoch(epoch)

        self.trainer.train_epoch(epoch, on_round=after_round, start=start)
        train_loss = self.loss_sum / total
        self.position, self.loss_sum = 0, 0.0
        self._evaluate(train_loss, train_time=self._training_seconds())
        self._save(epoch + 1)

    def _within_epoch(self, epoch: int) -> None:
        """After a round that does not end its epoch: checkpoint as configured, stop on request."""
        every = self.checkpoints.every
        if every and self.trainer.rounds % every == 0:
            self._save(epoch)
        self._stop_if_requested(epoch)

    def _stop_if_requested(self, epoch: int) -> None:
        if not self.stop.requested:
            return
        self._save(epoch)
        rounds = self.trainer.rounds
        checkpointed = self.saved_at == rounds
        where = (
            "no checkpoint holds it (train.checkpoint = false), so it cannot be resumed"
            if not checkpointed
            else f"saved its checkpoint and the metrics so far in {self.run_files.path}"
            if self.run_files is not None
            else "the checkpoint holds it"
        )
        place = (
            f"epoch {epoch + 1}, round {self.position} of {len(self.trainer.sampler)}"
            if self.position
            else f"the end of epoch {epoch}"
        )
        raise RunStopped(
            f"stopped by {self.stop.reason} after round {rounds} ({place}); {where}",
            rounds=rounds,
            checkpointed=checkpointed,
            reason=self.stop.reason or "",
        )

    def _save(self, epochs_done: int) -> None:
        """Checkpoint after ``epochs_done`` epochs and ``self.position`` rounds of the next."""
        rounds = self.trainer.rounds
        if not self.checkpoints.enabled or self.run_files is None or self.saved_at == rounds:
            return
        self.run_files.save_checkpoint(
            {
                "epoch": epochs_done,
                "position": self.position,
                "epoch_loss": self.loss_sum,
                "epoch_seconds": self._training_seconds() if self.position else 0.0,
                "elapsed": self.elapsed,
                "session": self.session.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "config": self.checkpoints.config,
            }
        )
        self.saved_at = rounds

    def _training_seconds(self) -> float:
        """Seconds of training in the current epoch so far (evaluations excluded)."""
        return time.perf_counter() - self.epoch_started - self.eval_seconds

    def _evaluate(self, train_loss: float | None, *, train_time: float) -> None:
        started = time.perf_counter()
        metrics = self.trainer.evaluate(SPLIT_TEST)
        self.eval_seconds += time.perf_counter() - started
        record = self._record(train_loss, metrics, train_time)
        self.records.append(record)
        if train_loss is not None:
            self.progress.epoch_ends(describe(record, self.elapsed - self.epoch_wall_started))
        if self.run_files is not None:
            self.run_files.append_metrics(record)
        target = self.schedule.target
        if self.schedule.stop_at_target and target is not None and target.reached_by(record):
            raise _TargetReached

    def _record(
        self, train_loss: float | None, metrics: dict[str, float], train_time: float
    ) -> dict[str, Any]:
        rounds = self.trainer.rounds
        epoch = round(rounds / len(self.trainer.sampler), 6)
        record: dict[str, Any] = {
            "epoch": int(epoch) if epoch.is_integer() else epoch,
            "round": rounds,
            "train_loss": train_loss,
        }
        record.update({f"test_{name}": value for name, value in metrics.items()})
        ledger = self.trainer.ledger
        if ledger is not None:
            record["bytes_up"] = ledger.total(phase="train", direction="up")
            record["bytes_down"] = ledger.total(phase="train", direction="down")
            record["bytes_eval"] = ledger.total(phase="eval")
        flops = self.session.bottom_flops()
        if flops is not None:
            record["bottom_flops"] = flops
        privacy = self.trainer.privacy_spent()
        if privacy is not None:
            record.update(privacy)
        probe = self.session.probe
        if probe is not None and train_loss is not None:  # at the end of an epoch
            record.update(probe.epoch_metrics(round(epoch) - 1))
        record["epoch_train_seconds"] = train_time
        record["wall_time"] = self.elapsed
        return record
