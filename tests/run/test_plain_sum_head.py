"""A head with no trainable model: the parties' logits summed or averaged (FedBCD's plain sum)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.conftest import make_vertical_data
from tests.run.variants import write_run_config
from vfl.cli import main
from vfl.config import load_config
from vfl.errors import ConfigError
from vfl.run.compose import build_session

PLAIN_SUM = ["model.head.fusion=sum", "model.head.top=none", "model.bottom.embedding_dim=1"]


@pytest.mark.parametrize("fusion", ["sum", "mean"])
def test_the_logits_are_the_parties_outputs_summed_or_averaged(fusion: str) -> None:
    # Prepare
    data = make_vertical_data(widths=(3, 5, 2))
    config = load_config(None, [*PLAIN_SUM, f"model.head.fusion={fusion}"])
    session = build_session(config, data)
    pairs = zip(session.parties, data.train_blocks, strict=True)
    outputs = [party.model(block[:6]) for party, block in pairs]

    # Execute
    head = session.trainer.server.head  # type: ignore[attr-defined]
    logits = head(outputs)

    # Assert
    expected = torch.stack(outputs).sum(dim=0)
    if fusion == "mean":
        expected = expected / 3
    assert torch.allclose(logits, expected)
    assert sum(p.numel() for p in head.parameters()) == 0
    assert session.trainer.server.optimizer is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "protocol",
    [
        ["protocol.local_steps=5"],
        ["protocol.local_steps=5", "protocol.schedule=sequential"],
        ["protocol.labels=shared", "protocol.local_steps=3"],
    ],
    ids=["fedbcd-p", "fedbcd-s", "shared-labels"],
)
def test_fedbcd_with_local_steps_trains_through_a_plain_sum(
    tmp_path: Path, protocol: list[str]
) -> None:
    # Prepare
    config = write_run_config(tmp_path)
    sets = [arg for item in [*PLAIN_SUM, *protocol] for arg in ("--set", item)]

    # Execute
    status = main(["run", str(config), "--run-dir", str(tmp_path / "run"), *sets])

    # Assert: it trains (the synthetic table is learnable) and resumes
    assert status == 0
    assert main(["run", "--resume", str(tmp_path / "run"), "--set", "train.epochs=5"]) == 0
    lines = (tmp_path / "run/metrics.jsonl").read_text().splitlines()
    assert len(lines) == 6


def test_a_plain_sum_of_outputs_wider_than_the_logits_is_refused() -> None:
    # Prepare
    data = make_vertical_data(widths=(3, 5))
    config = load_config(None, ["model.head.fusion=sum", "model.head.top=none"])

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"set model\.bottom\.embedding_dim to 1"):
        build_session(config, data)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["model.head.top=none"], "fusion"),
        (["model.head.top=none", "model.head.fusion=sum", "model.head.hidden=[4]"], "hidden"),
    ],
)
def test_a_plain_sum_head_needs_a_summing_fusion_and_no_hidden_layers(
    overrides: list[str], named: str
) -> None:
    with pytest.raises(ConfigError, match=f"model.head.{named}"):
        load_config(None, overrides)
