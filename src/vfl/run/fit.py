"""The epoch loop shared by every protocol: train, evaluate, record, checkpoint."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch
from tqdm import tqdm

from vfl.errors import ConfigError
from vfl.protocol.base import Trainer
from vfl.results.files import LEDGER, SUMMARY, RunDirectory
from vfl.results.summary import Target, summarize
from vfl.run.session import PartyGroup, Session
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
    """

    epochs: int
    eval_at_start: bool = True
    eval_every: int = 0
    target: Target | None = None
    stop_at_target: bool = False


class _TargetReached(Exception):
    """Raised from inside an epoch to stop training at the target."""


def fit(
    session: Session[PartyGroup],
    *,
    epochs: int,
    run: RunDirectory | None = None,
    progress: bool = True,
    checkpoint: bool = True,
    resume: bool = False,
    eval_at_start: bool = True,
    eval_every: int = 0,
    target: Target | None = None,
    stop_at_target: bool = False,
) -> list[dict[str, Any]]:
    """Train for ``epochs`` epochs, evaluating on the test split after each (and in between).

    With a run directory, records go to ``metrics.jsonl`` and a checkpoint is written after every
    epoch; with ``resume``, training continues after the checkpoint's last completed epoch.
    With ``eval_at_start``, a fresh run first records epoch 0: the untrained model, no traffic.
    ``eval_every`` adds evaluations every that many rounds (their ``epoch`` is fractional).
    ``target`` adds rounds, bytes and time to reach a metric value to the summary, and with
    ``stop_at_target`` training ends at the first evaluation that meets it.

    Returns:
        One metrics record per evaluation (all epochs, including resumed ones).
    """
    if stop_at_target and target is None:
        raise ConfigError("stopping at the target needs a target (target.metric)")
    schedule = Schedule(epochs, eval_at_start, eval_every, target, stop_at_target)
    return _Fit(session, schedule, run, progress, checkpoint).run(resume)


class _Fit:
    def __init__(
        self,
        session: Session[PartyGroup],
        schedule: Schedule,
        run: RunDirectory | None,
        progress: bool,
        checkpoint: bool,
    ) -> None:
        self.session = session
        self.trainer: Trainer = session.trainer
        self.schedule = schedule
        self.run_files = run
        self.progress = progress
        self.checkpoint = checkpoint and run is not None
        self.records: list[dict[str, Any]] = []
        self.earlier = 0.0  # wall time of the run before a resume
        self.started = time.perf_counter()
        self.epoch_started = self.started
        self.eval_seconds = 0.0

    @property
    def elapsed(self) -> float:
        """Wall time of the run so far, across resumes."""
        return self.earlier + time.perf_counter() - self.started

    def run(self, resume: bool) -> list[dict[str, Any]]:
        start_epoch = self._resume() if resume else 0
        self.records = self.run_files.read_metrics() if self.run_files is not None else []
        self.trainer.setup()
        try:
            if self.schedule.eval_at_start and start_epoch == 0:
                self._evaluate(None, train_time=0.0)
            for epoch in range(start_epoch, self.schedule.epochs):
                self._epoch(epoch)
        except _TargetReached:
            pass
        if self.run_files is not None:
            summary = summarize(self.records, target=self.schedule.target)
            self.run_files.write_json(SUMMARY, summary)
            if self.trainer.ledger is not None:
                self.trainer.ledger.write_csv(self.run_files.file(LEDGER))
        return self.records

    def _resume(self) -> int:
        if self.run_files is None:
            raise ConfigError("resuming needs the run directory that holds the checkpoint")
        state = self.run_files.load_checkpoint()
        self.session.load_state_dict(state["session"])
        torch.set_rng_state(state["torch_rng"])
        self.earlier = float(state["elapsed"])
        epoch = int(state["epoch"])
        self.run_files.truncate_metrics(epoch)
        return epoch

    def _epoch(self, epoch: int) -> None:
        self.epoch_started = time.perf_counter()
        self.eval_seconds = 0.0
        total = len(self.trainer.sampler)
        with _RoundBar(epoch, self.schedule.epochs, total, self.progress) as bar:

            def after_round(loss: float) -> None:
                bar(loss)
                every = self.schedule.eval_every
                if every and self.trainer.rounds % every == 0 and self.trainer.rounds % total:
                    self._evaluate(None, train_time=self._training_seconds())

            train_loss = self.trainer.train_epoch(epoch, on_round=after_round)
        self._evaluate(train_loss, train_time=self._training_seconds())
        if self.checkpoint and self.run_files is not None:
            self.run_files.save_checkpoint(
                {
                    "epoch": epoch + 1,
                    "elapsed": self.elapsed,
                    "session": self.session.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                }
            )

    def _training_seconds(self) -> float:
        """Seconds of training in the current epoch so far (evaluations excluded)."""
        return time.perf_counter() - self.epoch_started - self.eval_seconds

    def _evaluate(self, train_loss: float | None, *, train_time: float) -> None:
        started = time.perf_counter()
        metrics = self.trainer.evaluate(SPLIT_TEST)
        self.eval_seconds += time.perf_counter() - started
        record = self._record(train_loss, metrics, train_time)
        self.records.append(record)
        if self.progress and train_loss is not None:
            tqdm.write(_describe(record))
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
        record["epoch_train_seconds"] = train_time
        record["wall_time"] = self.elapsed
        return record


class _RoundBar:
    """A tqdm bar over one epoch's rounds that shows the running loss."""

    def __init__(self, epoch: int, epochs: int, total: int, enabled: bool) -> None:
        self._bar = tqdm(
            total=total,
            desc=f"epoch {epoch + 1}/{epochs}",
            unit="round",
            leave=False,
            disable=None if enabled else True,  # None: only on a terminal
            dynamic_ncols=True,
        )
        self._loss = math.nan

    def __call__(self, loss: float) -> None:
        self._loss = loss if math.isnan(self._loss) else 0.9 * self._loss + 0.1 * loss
        self._bar.update(1)
        if self._bar.n % 20 == 0:
            self._bar.set_postfix(loss=f"{self._loss:.4f}", refresh=False)

    def __enter__(self) -> _RoundBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.close()


def _describe(record: dict[str, Any]) -> str:
    parts = [f"epoch {record['epoch']}"]
    if record["train_loss"] is not None:
        parts.append(f"train_loss {record['train_loss']:.4f}")
    parts += [f"{k} {v:.4f}" for k, v in record.items() if k.startswith("test_")]
    if "bytes_up" in record:
        megabytes = (record["bytes_up"] + record["bytes_down"]) / 2**20
        parts.append(f"train_traffic {megabytes:.1f} MiB")
    if "epsilon" in record:
        parts.append(f"epsilon {record['epsilon']:.3g}")
    parts.append(f"{record['epoch_train_seconds']:.1f}s")
    return " | ".join(parts)
