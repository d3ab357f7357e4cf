"""Every protocol variant a run can be composed into, as ``--set`` overrides of one small config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from tests.test_cli import write_table

VARIANTS: dict[str, tuple[str, ...]] = {
    "split-learning": (),
    "cvfl-shared-lattice": (
        "protocol.labels=shared",
        "protocol.local_steps=2",
        "compress.embedding.name=lattice",
        "compress.embedding.bits=3",
        "compress.embedding.schedule=diminishing",
    ),
    "fedbcd-parallel": (
        "protocol.local_steps=3",
        "train.optimizer.name=sgd",
        "train.optimizer.lr=0.1",
        "train.optimizer.lr_schedule=inverse_sqrt",
    ),
    "fedbcd-sequential": ("protocol.schedule=sequential", "protocol.local_steps=2"),
    "active-party": ("protocol.active_party=1", "protocol.local_steps=2"),
    "lvfl-schedule": (
        "lightweight.alpha.kind=steps",
        "lightweight.alpha.steps=[[0, 0.0], [25, 0.5]]",
        "lightweight.beta.value=0.3",
        "compress.embedding.name=scalar",
        "compress.embedding.bits=6",
    ),
    "pbm-secure-aggregation": (
        "privacy.mechanism=pbm",
        "privacy.trials=16",
        "privacy.secure_aggregation=on",
        "model.head.fusion=sum",
        "model.bottom.output_activation=tanh",
    ),
    "topk-gradient-selection": (
        "compress.embedding.name=topk",
        "compress.embedding.ratio=0.5",
        "compress.embedding.select=gradient",
        "compress.gradient.name=scalar",
        "compress.gradient.bits=8",
    ),
}
"""One entry per protocol variant: split learning, C-VFL shared labels with a quantizer,
FedBCD-p and -s, an active party, LVFL with a pruning schedule, PBM with secure aggregation,
top-k with gradient selection."""

TIME_FIELDS = ("wall_time", "epoch_train_seconds")
MEASURED_SECONDS = "compute_seconds"
"""Per-round compute records hold measured time: the one checkpointed value a resume changes."""


def write_run_config(folder: Path) -> Path:
    """A three-party config over a small synthetic table (10 rounds per epoch)."""
    table = write_table(folder / "table.csv", rows=400)
    config = folder / "run.toml"
    config.write_text(
        "\n".join(
            [
                "[data]",
                'name = "table"',
                f'path = "{table}"',
                'label = "default"',
                'id_column = "id"',
                "[partition]",
                'scheme = "columns"',
                "num_parties = 3",
                'groups = [["income"], ["debt"], ["region", "age"]]',
                "[model.bottom]",
                "hidden = [8]",
                "embedding_dim = 4",
                "[train]",
                "epochs = 4",
                "batch_size = 32",
                "[train.optimizer]",
                "lr = 0.02",
                "[output]",
                "progress = false",
            ]
        )
        + "\n"
    )
    return config


def assert_same_state(left: Any, right: Any, path: str = "state") -> None:
    """Recursively equal: tensors bit for bit, containers key for key, other values by ``==``."""
    if isinstance(left, torch.Tensor):
        assert isinstance(right, torch.Tensor), path
        assert left.dtype == right.dtype and torch.equal(left, right), path
    elif isinstance(left, dict):
        assert isinstance(right, dict) and set(left) == set(right), f"{path}: keys differ"
        for key in left:
            if key != MEASURED_SECONDS:
                assert_same_state(left[key], right[key], f"{path}[{key!r}]")
    elif isinstance(left, list | tuple):
        assert isinstance(right, list | tuple) and len(left) == len(right), path
        for i, (a, b) in enumerate(zip(left, right, strict=True)):
            assert_same_state(a, b, f"{path}[{i}]")
    else:
        assert left == right, f"{path}: {left!r} != {right!r}"


def without_time(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Metrics records without their wall-clock fields (the only ones a resume may change)."""
    return [{k: v for k, v in r.items() if k not in TIME_FIELDS} for r in records]


LedgerRow = tuple[int, str, str, int, str, int, int]
SETUP = "setup"


def ledger_rows(csv_text: str) -> list[LedgerRow]:
    """The rows of a ``ledger.csv``: round, phase, direction, party, kind, messages, bytes."""
    rows = []
    for line in csv_text.splitlines()[1:]:
        r, phase, direction, party, kind, messages, size = line.split(",")
        rows.append((int(r), phase, direction, int(party), kind, int(messages), int(size)))
    return rows


def assert_same_ledger(
    straight: list[LedgerRow], resumed: list[LedgerRow], resumed_at: int
) -> None:
    """Equal ledgers, but that a resumed run agrees on secure-aggregation keys once more.

    Key material is never checkpointed: after a restart the parties agree on fresh pairwise
    keys (``setup`` phase). Every training and evaluation row must be identical; the resumed
    run's setup rows are the straight run's plus one agreement, of the same sizes, at the
    round it resumed from.
    """
    assert [r for r in resumed if r[1] != SETUP] == [r for r in straight if r[1] != SETUP]
    first = [r for r in straight if r[1] == SETUP]
    again = [(resumed_at, *r[1:]) for r in first]
    assert sorted(r for r in resumed if r[1] == SETUP) == sorted(first + again)
