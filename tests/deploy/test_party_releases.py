"""A deployed party's release count: by sample ID, across setups, alignments, runs and tables."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
import torch

from tests.deploy.scenario import make_scenario
from tests.deploy.test_deployment import VARIANTS
from tests.deploy.test_psi import party_tables
from vfl.config.io import to_toml
from vfl.deploy.alignment import Alignment
from vfl.deploy.config import PartyPrivacyConfig, load_run_config, party_view
from vfl.deploy.messages import SetupRequest
from vfl.deploy.party import PartyRuntime
from vfl.deploy.state import PartyState
from vfl.errors import PrivacyBudgetExhausted, ProtocolError
from vfl.privacy.events import PbmEvent
from vfl.privacy.releases import ReleaseGuard
from vfl.privacy.secure_sum import PartySecureSum

TRAIN_IDS = [f"r{i}" for i in range(6)]
EVENT = PbmEvent(trials=16, beta=0.05, parties=2, dimension=4)


def runtime(
    root: Path, privacy: PartyPrivacyConfig, train_ids: list[str] = TRAIN_IDS
) -> PartyRuntime:
    tables = party_tables({"train": train_ids, "test": ["t0", "t1"]}, seed=0)
    return PartyRuntime(1, tables, PartyState(root / "state", resume=True), privacy=privacy)


def set_up(
    party: PartyRuntime, root: Path, alignment: Alignment, mechanism: Literal["none", "pbm"]
) -> None:
    """Save ``alignment`` at the party and send it a setup of a two-party run over it."""
    party.state.save_alignment(alignment)
    scenario = make_scenario(root / f"run-{alignment.id}", **VARIANTS["pbm-secure-sum"])
    config, _ = load_run_config(scenario.run_toml)
    config = replace(config, privacy=replace(config.privacy, mechanism=mechanism))
    party.handle(
        SetupRequest(
            round=0,
            config=to_toml(party_view(config)),
            alignment=alignment.id,
            restore_round=-1,
            num_parties=2,
            num_classes=2,
            labels=torch.zeros(0, dtype=torch.int64),
        )
    )


def guard_of(party: PartyRuntime) -> ReleaseGuard:
    assert party.party is not None
    privacy = party.party.options.privacy
    assert isinstance(privacy, PartySecureSum) and privacy.guard is not None
    return privacy.guard


def alignment(name: str, rows: list[int]) -> Alignment:
    return Alignment(name, {0: np.array(rows, dtype=np.int64), 1: np.array([1], dtype=np.int64)})


def test_a_new_alignment_of_the_same_table_continues_the_count_of_its_rows(
    tmp_path: Path,
) -> None:
    # Prepare: a first run aligned on table rows 5, 0, 3 releases its block twice
    party = runtime(tmp_path, PartyPrivacyConfig(parties=1))
    set_up(party, tmp_path, alignment("aaaa", [5, 0, 3]), "pbm")
    first = guard_of(party)
    for _ in range(2):
        first.admit(np.array([0, 1, 2], dtype=np.int64), EVENT)

    # Execute: a new run (a fresh alignment, another order and other rows) in a new process
    again = runtime(tmp_path, PartyPrivacyConfig(parties=1))
    set_up(again, tmp_path, alignment("bbbb", [3, 4, 5]), "pbm")
    second = guard_of(again)

    # Assert: counted by table row, whichever alignment released it
    assert second.uses.tolist() == [2, 0, 0, 2, 0, 2]
    assert second.events == {EVENT}
    second.admit(np.array([0, 1], dtype=np.int64), EVENT)  # table rows 3 and 4
    assert second.uses.tolist() == [2, 0, 0, 3, 1, 2]
    assert second.parties == 1  # PARTY.toml's privacy settings reach the guard
    assert [p.name for p in (tmp_path / "state").glob("releases*")] == ["releases.bin"]


def test_a_new_state_dir_and_an_edited_table_keep_the_count_in_the_journal_dir(
    tmp_path: Path,
) -> None:
    # Prepare: a first run releases samples r5, r0, r3 once
    settings = PartyPrivacyConfig(journal_dir=str(tmp_path / "journal"))
    party = runtime(tmp_path / "first", settings)
    set_up(party, tmp_path, alignment("aaaa", [5, 0, 3]), "pbm")
    guard_of(party).admit(np.array([0, 1, 2], dtype=np.int64), EVENT)

    # Execute: a later run in a new state directory, over a table that lost r0 and gained r9
    edited = ["r9", "r5", "r3", "r1"]
    later = runtime(tmp_path / "second", settings, train_ids=edited)
    set_up(later, tmp_path, alignment("bbbb", [0, 1, 2, 3]), "pbm")

    # Assert: counted by sample ID
    assert guard_of(later).uses.tolist() == [0, 1, 1, 0]
    assert not list((tmp_path / "second" / "state").glob("releases*"))


def test_a_run_without_pbm_is_journaled_and_makes_the_partys_epsilon_infinite(
    tmp_path: Path,
) -> None:
    # Prepare: a run without PBM over rows 0 and 1, no budget
    party = runtime(tmp_path, PartyPrivacyConfig())
    set_up(party, tmp_path, alignment("aaaa", [0, 1]), "none")

    # Execute: a later PBM run over the same table
    later = runtime(tmp_path, PartyPrivacyConfig())
    set_up(later, tmp_path, alignment("bbbb", [2, 3]), "pbm")
    guard = guard_of(later)

    # Assert
    assert guard.exposed and guard.epsilon() == float("inf")
    assert guard.exact is not None and guard.exact.tolist() == [1, 1, 0, 0, 0, 0]
    # Assert: with a budget, nothing more leaves
    strict = runtime(tmp_path, PartyPrivacyConfig(max_epsilon=100.0))
    set_up(strict, tmp_path, alignment("cccc", [2, 3]), "pbm")
    with pytest.raises(PrivacyBudgetExhausted, match="trained on in a run without PBM"):
        guard_of(strict).admit(np.array([0], dtype=np.int64), EVENT)


def test_a_party_with_a_budget_refuses_a_run_without_pbm(tmp_path: Path) -> None:
    # Prepare
    party = runtime(tmp_path, PartyPrivacyConfig(max_epsilon=4.0))

    # Execute / Assert
    with pytest.raises(ProtocolError) as caught:
        set_up(party, tmp_path, alignment("aaaa", [0, 1]), "none")
    assert str(caught.value) == (
        "party 1 refuses the run: its privacy.max_epsilon = 4 needs privacy.mechanism = 'pbm',"
        " and this run has 'none' (its embeddings would leave without noise)"
    )
    # Assert: the control: without a budget the same run is set up
    free = runtime(tmp_path / "free", PartyPrivacyConfig())
    set_up(free, tmp_path / "free", alignment("aaaa", [0, 1]), "none")
    assert free.party is not None
