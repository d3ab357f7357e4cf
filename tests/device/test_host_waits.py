"""A round on CUDA waits for the device only where the wire needs the bytes.

On a GPU every read of a device value (``.item()``, ``float()``, ``bool()``), copy to the host,
blocking copy to the device, data-dependent shape and device query makes the host wait for the
device. The fake device counts them (``fake_accelerator``); each protocol's budget per round is
what its messages need, and nothing else:

- one copy to the host per message carrying a tensor computed on the device: each upload (an
  embedding, a compressed payload, PBM counts) and each gradient message;
- the server's loss, read once per gradient computation (a non-finite loss stops the round
  before any gradient leaves), and one read of whether the head is finite;
- no blocking copy to the device (data crosses with ``non_blocking``), no data-dependent shapes,
  no device query (torch's optimizers ask for the device count on every step unless told not
  to).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.conftest import make_vertical_data
from tests.device.fake_accelerator import (
    BLOCKING_COPY_TO_DEVICE,
    COPY_TO_HOST,
    DATA_DEPENDENT,
    DEVICE_QUERY,
    SCALAR_READ,
    SYNCHRONIZE,
    fake_cuda_device,
)
from vfl.config import load_config
from vfl.run.compose import build_session

PARTIES = 3
ROUNDS = 8  # per epoch: 256 rows in batches of 32


@dataclass(frozen=True)
class Budget:
    """The host waits one round may cost.

    Attributes:
        copies: Copies to the host (one per message carrying a device tensor).
        reads: Scalar reads (the losses that gate gradients, the head's finiteness).
    """

    copies: int
    reads: int


M = PARTIES
BUDGETS: dict[str, tuple[tuple[str, ...], Budget]] = {
    # M uploads, M gradients; the loss and the head's finiteness
    "split-learning": ((), Budget(2 * M, 2)),
    "split-learning-unpipelined": (("protocol.pipeline=false",), Budget(2 * M, 2)),
    "fedbcd-parallel-q3": (("protocol.local_steps=3",), Budget(2 * M, 2)),
    "lvfl-sparsified": (("lightweight.beta.value=0.3",), Budget(2 * M, 2)),
    "scalar-both-ways": (
        (
            "compress.embedding.name=scalar",
            "compress.embedding.bits=8",
            "compress.gradient.name=scalar",
            "compress.gradient.bits=8",
        ),
        Budget(2 * M, 2),
    ),
    "topk-gradient-selection": (
        (
            "compress.embedding.name=topk",
            "compress.embedding.ratio=0.5",
            "compress.embedding.select=gradient",
        ),
        Budget(2 * M, 2),
    ),
    "gaussian-gradient-noise": (
        ("privacy.gradient_noise.noise_multiplier=1.0", "privacy.gradient_noise.clip=1.0"),
        Budget(2 * M, 2),
    ),
    # the active party's block stays in the server's process: M - 1 uploads and gradients
    "active-party": (("protocol.active_party=1", "protocol.local_steps=2"), Budget(2 * M - 2, 2)),
    # M uploads, M gradients, M refreshed uploads; a loss per party's gradient and the server's
    "fedbcd-sequential": (("protocol.schedule=sequential",), Budget(3 * M, M + 2)),
    # M uploads and the compressed server model; the server's loss and finiteness
    "cvfl-shared-labels": (
        (
            "protocol.labels=shared",
            "protocol.local_steps=2",
            "compress.embedding.name=lattice",
            "compress.embedding.bits=3",
        ),
        Budget(M + 1, 2),
    ),
    # M uploads of counts and one gradient (of the sum) for every party
    "pbm-secure-aggregation": (
        (
            "privacy.mechanism=pbm",
            "privacy.trials=16",
            "privacy.secure_aggregation=on",
            "model.head.fusion=sum",
            "model.bottom.output_activation=tanh",
        ),
        Budget(M + 1, 2),
    ),
    # no messages: the loss of each step
    "centralized": (("protocol.mode=centralized",), Budget(0, 1)),
}


@pytest.mark.parametrize("path", list(BUDGETS))
def test_a_round_waits_for_the_device_only_where_its_messages_need_it(path: str) -> None:
    # Prepare
    overrides, budget = BUDGETS[path]
    data = make_vertical_data(num_train=256, num_test=64, widths=(3, 5, 4))
    settings = ["train.device=cuda", "train.batch_size=32", "model.bottom.hidden=[8]", *overrides]
    with fake_cuda_device() as fake:
        trainer = build_session(load_config(None, settings), data).trainer
        trainer.setup()
        trainer.train_epoch(0)  # first steps: optimizer state, caches
        fake.reset_counts()

        # Execute
        trainer.train_epoch(1)

    # Assert
    per_round = {kind: count / ROUNDS for kind, count in fake.syncs.items()}
    report = f"{path}: {per_round} per round\n{fake.report()}"
    assert fake.syncs[COPY_TO_HOST] <= budget.copies * ROUNDS, report
    assert fake.syncs[SCALAR_READ] <= budget.reads * ROUNDS, report
    for kind in (BLOCKING_COPY_TO_DEVICE, DATA_DEPENDENT, DEVICE_QUERY, SYNCHRONIZE):
        assert fake.syncs[kind] == 0, report
    assert fake.syncs[COPY_TO_HOST] > 0 or path == "centralized"  # the control: it counts


def test_the_count_sees_a_round_that_waits_more_than_its_messages_need(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Prepare: a server that reads its loss at every local step (as it once did)
    from vfl.roles import server as server_module

    float_each = server_module.Server.train_on

    def wasteful(self, ids, inputs, steps=None):  # type: ignore[no-untyped-def]
        loss, grads = float_each(self, ids, inputs, steps)
        for grad in grads:
            grad.sum().item()
        return loss, grads

    monkeypatch.setattr(server_module.Server, "train_on", wasteful)
    data = make_vertical_data(num_train=256, num_test=64, widths=(3, 5, 4))
    with fake_cuda_device() as fake:
        trainer = build_session(load_config(None, ["train.device=cuda"]), data).trainer

        # Execute
        trainer.train_epoch(0)

    # Assert
    assert fake.syncs[SCALAR_READ] > BUDGETS["split-learning"][1].reads * 2
