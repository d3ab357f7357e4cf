"""The epoch loop shared by every protocol: train, evaluate, record, checkpoint."""

from __future__ import annotations

import math
import time
from typing import Any

import torch
from tqdm import tqdm

from vfl.errors import ConfigError
from vfl.results import LEDGER, SUMMARY, RunDirectory
from vfl.simulation import Simulation
from vfl.summary import Target, summarize
from vfl.transport.ledger import Ledger
from vfl.wire import SPLIT_TEST


def fit(
    simulation: Simulation,
    *,
    epochs: int,
    run: RunDirectory | None = None,
    progress: bool = True,
    checkpoint: bool = True,
    resume: bool = False,
    eval_at_start: bool = True,
    target: Target | None = None,
) -> list[dict[str, Any]]:
    """Train for ``epochs`` epochs, evaluating on the test split after each.

    With a run directory, records go to ``metrics.jsonl`` and a checkpoint is written after every
    epoch; with ``resume``, training continues after the checkpoint's last completed epoch.

    With ``eval_at_start``, a fresh run first records epoch 0: the untrained model, no traffic.
    ``target`` adds rounds, bytes and time to reach a metric value to the summary.

    Returns:
        One metrics record per evaluation (all epochs, including resumed ones).
    """
    start_epoch, elapsed = 0, 0.0
    if resume:
        if run is None:
            raise ConfigError("resuming needs the run directory that holds the checkpoint")
        state = run.load_checkpoint()
        simulation.load_state_dict(state["simulation"])
        torch.set_rng_state(state["torch_rng"])
        start_epoch, elapsed = int(state["epoch"]), float(state["elapsed"])
        run.truncate_metrics(start_epoch)
    records = run.read_metrics() if run is not None else []
    trainer = simulation.trainer
    trainer.setup()
    if eval_at_start and start_epoch == 0:
        started = time.perf_counter()
        metrics = trainer.evaluate(SPLIT_TEST)
        elapsed += time.perf_counter() - started
        record = _record(
            -1,
            trainer.rounds,
            None,
            metrics,
            trainer.ledger,
            train_time=0.0,
            elapsed=elapsed,
            privacy=trainer.privacy_spent(),
        )
        records.append(record)
        if run is not None:
            run.append_metrics(record)
    for epoch in range(start_epoch, epochs):
        started = time.perf_counter()
        with _RoundBar(epoch, epochs, len(trainer.sampler), progress) as bar:
            train_loss = trainer.train_epoch(epoch, on_round=bar)
        train_time = time.perf_counter() - started
        metrics = trainer.evaluate(SPLIT_TEST)
        elapsed += time.perf_counter() - started
        record = _record(
            epoch,
            trainer.rounds,
            train_loss,
            metrics,
            trainer.ledger,
            train_time=train_time,
            elapsed=elapsed,
            privacy=trainer.privacy_spent(),
        )
        records.append(record)
        if progress:
            tqdm.write(_describe(record))
        if run is not None:
            run.append_metrics(record)
            if checkpoint:
                run.save_checkpoint(
                    {
                        "epoch": epoch + 1,
                        "elapsed": elapsed,
                        "simulation": simulation.state_dict(),
                        "torch_rng": torch.get_rng_state(),
                    }
                )
    if run is not None:
        run.write_json(SUMMARY, summarize(records, target=target))
        if trainer.ledger is not None:
            trainer.ledger.write_csv(run.file(LEDGER))
    return records


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


def _record(
    epoch: int,
    rounds: int,
    train_loss: float | None,
    metrics: dict[str, float],
    ledger: Ledger | None,
    *,
    train_time: float,
    elapsed: float,
    privacy: dict[str, float] | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {"epoch": epoch + 1, "round": rounds, "train_loss": train_loss}
    record.update({f"test_{name}": value for name, value in metrics.items()})
    if ledger is not None:
        record["bytes_up"] = ledger.total(phase="train", direction="up")
        record["bytes_down"] = ledger.total(phase="train", direction="down")
        record["bytes_eval"] = ledger.total(phase="eval")
    if privacy is not None:
        record.update(privacy)
    record["epoch_train_seconds"] = train_time
    record["wall_time"] = elapsed
    return record


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
