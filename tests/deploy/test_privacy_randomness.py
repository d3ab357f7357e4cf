"""A deployment's PBM noise never comes from ``train.seed``, and each party counts its releases.

The server refuses ``privacy.randomness = "seeded"``, a party refuses a setup that asks for it,
and two deployments with the same seed draw different noise (while two deployments without
PBM end identically: the control). Each party journals its releases of every training row and
stops the run at its own budget.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import pytest
import torch

from tests.deploy.scenario import Scenario, make_scenario, party_alignment, run_launch
from tests.deploy.test_deployment import VARIANTS, Variant
from tests.deploy.test_psi import party_tables
from vfl.cli import main
from vfl.config.io import to_toml
from vfl.deploy.config import load_run_config, party_view
from vfl.deploy.data import id_bytes
from vfl.deploy.messages import SetupRequest
from vfl.deploy.party import PartyRuntime
from vfl.deploy.releases import FILE_NAME, id_keys, open_journal
from vfl.deploy.state import PartyState
from vfl.errors import ConfigError, ProtocolError
from vfl.privacy.budget import EpochBudget
from vfl.privacy.events import PbmEvent

PBM: Variant = VARIANTS["pbm-secure-sum"]


def test_vfl_server_refuses_seeded_privacy_randomness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path, **PBM)

    # Execute
    status = main(
        ["server", "--config", str(scenario.run_toml), "--set", "privacy.randomness=seeded"]
    )

    # Assert
    assert status == 2
    assert (
        "privacy.randomness = 'seeded' is refused in a deployment: the server chooses"
        " train.seed" in capsys.readouterr().err
    )


def test_vfl_server_refuses_the_torch_sampler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path, **PBM)

    # Execute
    status = main(["server", "--config", str(scenario.run_toml), "--set", "privacy.sampler=torch"])

    # Assert
    assert status == 2
    assert (
        "privacy.sampler = 'torch' is refused in a deployment: only 'chacha' draws the noise"
        " from a cryptographic generator" in capsys.readouterr().err
    )


def test_vfl_server_refuses_a_budget_it_would_not_enforce(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the server's privacy.max_epsilon would be silently ignored; the parties' own
    # budgets (PARTY.toml) are what a deployment enforces
    scenario = make_scenario(tmp_path, **PBM)

    # Execute
    status = main(["server", "--config", str(scenario.run_toml), "--set", "privacy.max_epsilon=5"])

    # Assert
    assert status == 2
    assert "privacy.max_epsilon is not enforced by a deployed server" in capsys.readouterr().err


def setup_request(
    scenario: Scenario,
    randomness: Literal["auto", "seeded"],
    sampler: Literal["chacha", "torch"] = "chacha",
) -> SetupRequest:
    config, _ = load_run_config(scenario.run_toml)
    privacy = replace(config.privacy, randomness=randomness, sampler=sampler)
    config = replace(config, privacy=privacy)
    return SetupRequest(
        round=0,
        config=to_toml(party_view(config)),
        alignment="a1b2",
        restore_round=-1,
        num_parties=2,
        num_classes=2,
        labels=torch.zeros(0, dtype=torch.int64),
    )


def test_a_party_refuses_a_setup_that_asks_for_seeded_noise(tmp_path: Path) -> None:
    # Prepare
    scenario = make_scenario(tmp_path, **PBM)
    tables = party_tables({"train": ["a", "b"], "test": ["c"]}, seed=0)
    runtime = PartyRuntime(1, tables, PartyState(tmp_path / "state", resume=False))

    # Execute / Assert
    with pytest.raises(ProtocolError) as caught:
        runtime.handle(setup_request(scenario, "seeded"))
    assert str(caught.value) == (
        "party 1 refuses the run: privacy.randomness = 'seeded' would derive its noise from"
        " train.seed, a value the server chose"
    )
    # Assert: the control: "auto" passes that check (and stops later: nothing was aligned)
    with pytest.raises(ConfigError, match="no alignment 'a1b2'"):
        runtime.handle(setup_request(scenario, "auto"))


def test_a_party_refuses_a_setup_that_asks_for_the_torch_sampler(tmp_path: Path) -> None:
    # Prepare
    scenario = make_scenario(tmp_path, **PBM)
    tables = party_tables({"train": ["a", "b"], "test": ["c"]}, seed=0)
    runtime = PartyRuntime(1, tables, PartyState(tmp_path / "state", resume=False))

    # Execute / Assert
    with pytest.raises(ProtocolError) as caught:
        runtime.handle(setup_request(scenario, "auto", "torch"))
    assert str(caught.value) == (
        "party 1 refuses the run: privacy.sampler = 'torch' is not a cryptographic generator;"
        " a deployment draws its noise with 'chacha'"
    )
    # Assert: the control: "chacha" passes that check (and stops later: nothing was aligned)
    with pytest.raises(ConfigError, match="no alignment 'a1b2'"):
        runtime.handle(setup_request(scenario, "auto", "chacha"))


def launched(root: Path, variant: Variant) -> Scenario:
    scenario = make_scenario(root, **variant)
    result = run_launch(scenario)
    assert result.returncode == 0, result.stderr[-4000:]
    return scenario


def head_of(scenario: Scenario) -> dict[str, torch.Tensor]:
    checkpoint = torch.load(scenario.run_dir / "checkpoint.pt", weights_only=True)
    head: dict[str, torch.Tensor] = checkpoint["session"]["trainer"]["server"]["head"]
    return head


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["pbm", "none"])
def test_two_deployments_with_the_same_seed_draw_fresh_pbm_noise(
    mechanism: str, tmp_path: Path
) -> None:
    # Prepare
    variant = PBM if mechanism == "pbm" else Variant()

    # Execute: two fresh deployments of the same data, config and train.seed
    first, second = (launched(tmp_path / name, variant) for name in ("first", "second"))

    # Assert
    same = [torch.equal(head_of(first)[k], v) for k, v in head_of(second).items()]
    if mechanism == "none":  # the control: without noise, the deployments are identical
        assert all(same)
        return
    assert not all(same)
    # Assert: the parties' OS keys never reach their checkpoints (a restore takes a fresh one)
    states = [
        torch.load(s.state_dir(1) / "checkpoint-0.pt", weights_only=True)["role"]["privacy"]
        for s in (first, second)
    ]
    assert all(state["sampler"] == "chacha" and "key" not in state for state in states)


def journal_uses(scenario: Scenario, party: int) -> tuple[list[int], list[int]]:
    """How often each training row of ``party``'s table left it: the aligned rows, the others."""
    ids = pd.read_csv(scenario.root / f"holder{party}-train.csv", dtype=str)["id"].to_numpy()
    path = scenario.state_dir(party) / FILE_NAME
    journal, uses, _, _ = open_journal(path, id_keys(id_bytes(ids)))
    journal.close()
    aligned = party_alignment(scenario, party).rows[0]
    others = np.setdiff1d(np.arange(len(ids)), aligned)
    return uses[aligned].tolist(), uses[others].tolist()


@pytest.mark.slow
def test_deployed_parties_journal_one_release_of_each_training_row_per_epoch(
    tmp_path: Path,
) -> None:
    # Execute
    scenario = launched(tmp_path, PBM)

    # Assert
    for party in (1, 2):
        aligned, others = journal_uses(scenario, party)
        assert aligned and set(aligned) == {2}  # two shuffled epochs
        assert others and set(others) == {0}  # rows outside the intersection never leave
        log = (scenario.run_dir / "logs" / f"party-{party}.log").read_text()
        assert "privacy (own count): samples released at most 2 times, epsilon" in log


@pytest.mark.slow
def test_a_deployed_party_stops_the_run_at_its_own_privacy_budget(tmp_path: Path) -> None:
    # Prepare: party 1's own budget fits one epoch of releases; the run plans two
    scenario = make_scenario(tmp_path, **PBM)
    config, _ = load_run_config(scenario.run_toml)
    event = PbmEvent(
        trials=config.privacy.trials,
        beta=config.privacy.beta,
        parties=2,
        dimension=config.model.bottom.embedding_dim,
    )
    budget = EpochBudget(event, 1e-5)
    limit = (budget.epsilon(1) + budget.epsilon(2)) / 2
    with scenario.party_tomls[1].open("a") as toml:
        toml.write(f"[privacy]\nmax_epsilon = {limit!r}\n")

    # Execute
    result = run_launch(scenario)

    # Assert
    assert result.returncode != 0
    assert f"max_epsilon = {limit:g}, which allows 1 release(s) of a row" in result.stderr
    assert set(journal_uses(scenario, 1)[0]) == {1}
