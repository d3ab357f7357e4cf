"""``vfl run`` for a tree protocol (``protocol.name = "secureboost"``): a run folder per tree.

Every holder is built in this process as SecureBoost's roles (``vfl.boost``), talking through the
in-process transport in real wire frames, so the bytes each tree records are the ledger's counts
of encoded frames. After every tree the run folder gains one ``metrics.jsonl`` record (train and
test loss, accuracy, F1 and AUC; bytes each way; seconds by phase) and a checkpoint
(``vfl.run.tree_checkpoint``) from which ``vfl run --resume`` continues; at the end,
``summary.json`` and one bundle per holder (``vfl.run.tree_bundles``). As with neural runs,
everything that can refuse the run (the folder, the config against its checkpoint, the data) is
checked before the first file is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from vfl.boost import ActiveBooster, BoostParams, KeyPair, PassiveBooster, TransportLink
from vfl.boost.link import PREDICT_PHASE, SETUP_PHASE, TRAIN_PHASE, local_link
from vfl.boost.predict import route
from vfl.boost.timing import TreeReport
from vfl.config import RunConfig
from vfl.config.boost import MEAN_LABEL
from vfl.config.io import to_toml
from vfl.data.dataset import Dataset
from vfl.data.partition import Partition
from vfl.errors import ConfigError
from vfl.results.files import (
    CONFIG,
    PARTITION,
    SUMMARY,
    RunDirectory,
    check_new,
    keep_copy,
    set_aside,
)
from vfl.results.metrics import Task, evaluate_logits
from vfl.results.summary import summarize
from vfl.run import tree_checkpoint
from vfl.run.bundles import BUNDLE
from vfl.run.data import prepare
from vfl.run.folders import check_unchanged
from vfl.run.progress import Progress, Terminal
from vfl.run.signals import RunStopped, StopRequest
from vfl.run.tree_bundles import export_trees
from vfl.run.tree_data import TreeData, tree_data

TEST = "test"
"""The name under which every holder keeps the test split's rows."""


@dataclass
class Holders:
    """Every SecureBoost role of a run in this process, and the link between them."""

    active: ActiveBooster
    passives: dict[int, PassiveBooster]
    link: TransportLink
    test_margins: npt.NDArray[np.float64]
    bytes: dict[str, int] = field(default_factory=lambda: {"up": 0, "down": 0, "eval": 0})


def train_trees(
    config: RunConfig,
    run_dir: Path,
    *,
    resume: bool = False,
    stop: StopRequest | None = None,
    on_start: Callable[[], None] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Train the configured trees into ``run_dir`` (or go on from its checkpoint with ``resume``).

    Raises:
        ConfigError: for a folder in the way (new run), a config that differs from the
            checkpoint's, fewer trees than done, or data that does not fit (before any file).
        RunStopped: if ``stop`` was requested (after the last complete tree's checkpoint).
    """
    from vfl.run.runner import failures_recorded  # the runner dispatches here by registration

    state = resumable_trees(config, run_dir) if resume else None
    if not resume:
        check_new(run_dir)
    dataset, partition, data = _load(config)
    holders = _build(config, data, state)
    if on_start is not None:
        on_start()
    run = RunDirectory(run_dir)
    with failures_recorded(run):
        try:
            _start_files(run, config, partition, state)
            _grow(config, run, holders, data, state, stop, progress or Terminal(bar=False))
        finally:
            holders.active.pool.close()
        summary = _summary(config, run)
        if config.output.bundle:
            export_trees(run, config, holders.active, holders.passives, partition, dataset)
        return summary


def resumable_trees(config: RunConfig, run_dir: Path) -> tree_checkpoint.TreeState:
    """The checkpoint of the tree run in ``run_dir``, if ``config`` may continue it.

    Raises:
        ConfigError: naming what refuses the resume (no run, a changed key, fewer trees).
        RunFileError: if the checkpoint is damaged.
    """
    if not run_dir.is_dir():
        raise ConfigError(f"--resume {str(run_dir)!r}: no such folder, so no run to resume")
    state = tree_checkpoint.load(RunDirectory(run_dir))
    check_unchanged(state.config, config, run_dir)
    if config.boost.num_trees < state.trees_done:
        raise ConfigError(
            f"boost.num_trees: the checkpoint of {str(run_dir)!r} holds {state.trees_done}"
            f" trees, so the run cannot end after {config.boost.num_trees}; resume with --set"
            f" boost.num_trees={state.trees_done} or more"
        )
    return state


def _load(config: RunConfig) -> tuple[Dataset, Partition, TreeData]:
    dataset, partition, vertical = prepare(config)
    return dataset, partition, tree_data(config, vertical)


def params_of(config: RunConfig) -> BoostParams:
    """The trees' hyper-parameters from ``[boost]`` (``base_score`` 0: the mean label)."""
    boost = config.boost
    return BoostParams(
        num_trees=boost.num_trees,
        max_depth=boost.max_depth,
        learning_rate=boost.learning_rate,
        reg_lambda=boost.reg_lambda,
        gamma=boost.gamma,
        min_child_weight=boost.min_child_weight,
        max_bin=boost.max_bin,
        objective=boost.objective,
        base_score=None if boost.base_score == MEAN_LABEL else boost.base_score,
    )


def _build(config: RunConfig, data: TreeData, state: tree_checkpoint.TreeState | None) -> Holders:
    params, label_party = params_of(config), data.label_party
    passives = {
        p: PassiveBooster(p, block, max_bin=params.max_bin)
        for p, block in data.train.items()
        if p != label_party
    }
    keys = KeyPair.generate(config.boost.key_bits)
    workers = config.boost.workers or None
    own = data.train[label_party]
    active = ActiveBooster(label_party, data.train_labels, own, params, keys, workers=workers)
    link = local_link(passives)
    link.phase = SETUP_PHASE
    active.connect(link, sorted(passives))
    for party, passive in passives.items():
        passive.attach(TEST, data.test[party])
    test_margins = np.full(len(data.test_labels), active.base_margin)
    holders = Holders(active, passives, link, test_margins)
    if state is not None:
        _restore(holders, data, state)
    return holders


def _restore(holders: Holders, data: TreeData, state: tree_checkpoint.TreeState) -> None:
    holders.active.restore(state.trees, state.label_splits, state.margins)
    if sorted(state.holder_splits) != sorted(holders.passives):
        raise ConfigError(
            f"the checkpoint holds the splits of parties {sorted(state.holder_splits)}, this run"
            f" has passive holders {sorted(holders.passives)}"
        )
    for party, passive in holders.passives.items():
        passive.restore(state.holder_splits[party], state.trees_done)
    holders.test_margins = _test_margins(holders, data, 0)
    holders.bytes = dict(state.bytes)


def _test_margins(holders: Holders, data: TreeData, first: int) -> npt.NDArray[np.float64]:
    """The test margins with the label holder's trees from ``first`` on added."""
    active, link = holders.active, holders.link
    link.phase = PREDICT_PHASE
    margins = holders.test_margins.copy()
    before = link.transport.ledger.total(phase=PREDICT_PHASE)
    trees = active.trees[first:]
    if trees:
        own = data.test[active.party]
        positions = route(trees, active.party, active.splits, own, link, TEST)
        for tree, leaves in zip(trees, positions, strict=True):
            margins += tree.leaf_weights()[leaves]
    holders.bytes["eval"] += link.transport.ledger.total(phase=PREDICT_PHASE) - before
    return margins


PREDICTIONS = "predictions.csv"
"""Where ``vfl predict RUN_DIR`` writes by default."""


def _start_files(
    run: RunDirectory,
    config: RunConfig,
    partition: Partition,
    state: tree_checkpoint.TreeState | None,
) -> None:
    run.write_text(CONFIG, to_toml(config))
    run.write_text(PARTITION, partition.to_json())
    if state is None:
        return
    run.truncate_metrics(state.trees_done)
    if state.trees_done < config.boost.num_trees:  # a finished run grows more trees
        if run.file(SUMMARY).exists():
            keep_copy(run.file(SUMMARY), "resumed")
        if run.file(BUNDLE).exists():
            set_aside(run.file(BUNDLE), "resumed")
        if run.file(PREDICTIONS).exists():  # `vfl predict`'s, of the model that is replaced
            set_aside(run.file(PREDICTIONS), "resumed")


def _grow(
    config: RunConfig,
    run: RunDirectory,
    holders: Holders,
    data: TreeData,
    state: tree_checkpoint.TreeState | None,
    stop: StopRequest | None,
    progress: Progress,
) -> None:
    active, link = holders.active, holders.link
    done = len(active.trees)
    elapsed = state.elapsed if state is not None else 0.0
    total = config.boost.num_trees
    for index in range(done, total):
        if stop is not None and stop.requested:
            _stopped(run, stop, index, total, checkpointed=config.train.checkpoint and index > 0)
        started = time.perf_counter()
        link.phase = TRAIN_PHASE
        ledger = link.transport.ledger
        before = (ledger.total(direction="up"), ledger.total(direction="down"))
        transport_before = link.transport_seconds
        report = active.grow_tree(link)
        report.bytes_up = ledger.total(direction="up") - before[0]
        report.bytes_down = ledger.total(direction="down") - before[1]
        report.transport_seconds = link.transport_seconds - transport_before
        holders.bytes["up"] += report.bytes_up
        holders.bytes["down"] += report.bytes_down
        holders.test_margins = _test_margins(holders, data, index)
        elapsed += time.perf_counter() - started
        record = _record(index + 1, holders, data, report, elapsed)
        run.append_metrics(record)
        if config.train.checkpoint:
            tree_checkpoint.save(run, _state(config, holders, elapsed))
        progress.epoch_ends(describe_tree(record, total))


def _stopped(
    run: RunDirectory, stop: StopRequest, trees: int, total: int, *, checkpointed: bool
) -> None:
    where = (
        f"saved its checkpoint and the metrics so far in {run.path}"
        if checkpointed
        else "no checkpoint holds it (train.checkpoint = false, or no tree yet), so it cannot"
        " be resumed"
    )
    raise RunStopped(
        f"stopped by {stop.reason} after tree {trees} of {total}; {where}",
        rounds=trees,
        checkpointed=checkpointed,
        reason=stop.reason or "",
    )


def _record(
    trees: int, holders: Holders, data: TreeData, report: TreeReport, elapsed: float
) -> dict[str, Any]:
    task = Task(2)
    train = evaluate_logits(task, _logits(holders.active.margins), data.train_labels_tensor)
    test = evaluate_logits(task, _logits(holders.test_margins), data.test_labels_tensor)
    return {
        "epoch": trees,
        "round": trees,
        "tree": trees,
        "train_loss": train["loss"],
        **{f"train_{k}": v for k, v in train.items() if k != "loss"},
        **{f"test_{k}": v for k, v in test.items()},
        "bytes_up": holders.bytes["up"],
        "bytes_down": holders.bytes["down"],
        "bytes_eval": holders.bytes["eval"],
        "tree_bytes_up": report.bytes_up,
        "tree_bytes_down": report.bytes_down,
        "seconds": {k: round(v, 6) for k, v in report.seconds.items()},
        "transport_seconds": report.transport_seconds,
        "ciphertexts_up": report.ciphertexts_up,
        "leaves": report.leaves,
        "epoch_train_seconds": sum(report.seconds.values()),
        "wall_time": elapsed,
    }


def _logits(margins: npt.NDArray[np.float64]) -> torch.Tensor:
    return torch.from_numpy(margins).reshape(-1, 1)


def describe_tree(record: dict[str, Any], total: int) -> str:
    """``tree 3/10 | train_loss 0.41 | test_auc 0.90 | ... | traffic 2.1 MiB | 12.0 s (...)``.

    The line of ``vfl run`` and of a deployment's server (whose records have no train loss).
    """
    parts = [f"tree {record['tree']}/{total}"]
    if record.get("train_loss") is not None:
        parts.append(f"train_loss {record['train_loss']:.4f}")
    parts += [f"{k} {v:.4f}" for k, v in record.items() if k.startswith("test_")]
    megabytes = (record["tree_bytes_up"] + record["tree_bytes_down"]) / 2**20
    parts.append(f"traffic {megabytes:.1f} MiB")
    seconds = record["seconds"]
    phases = ", ".join(f"{k} {v:.1f}" for k, v in seconds.items() if v >= 0.05)
    parts.append(f"{sum(seconds.values()):.1f} s ({phases})")
    return " | ".join(parts)


def _state(config: RunConfig, holders: Holders, elapsed: float) -> tree_checkpoint.TreeState:
    active = holders.active
    return tree_checkpoint.TreeState(
        trees=active.trees,
        label_splits=active.splits,
        margins=active.margins,
        holder_splits={p: h.splits for p, h in holders.passives.items()},
        elapsed=elapsed,
        config=to_toml(config),
        bytes=dict(holders.bytes),
    )


def _summary(config: RunConfig, run: RunDirectory) -> dict[str, Any]:
    records = run.read_metrics()
    summary = summarize(records)
    summary["protocol"] = config.protocol.name
    summary["trees"] = records[-1]["tree"]
    summary["seconds"] = _phase_totals(records)
    run.write_json(SUMMARY, summary)
    return summary


def _phase_totals(records: list[dict[str, Any]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for record in records:
        for phase, seconds in record["seconds"].items():
            totals[phase] = totals.get(phase, 0.0) + seconds
    return totals
