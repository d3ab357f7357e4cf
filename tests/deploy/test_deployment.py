"""A real deployment: ``vfl launch`` runs the server and two parties as separate processes.

One run (module fixture) on tables whose IDs overlap only partly and are listed in different
orders is checked against the in-process simulator (same parameters, same ledger), for its
alignment, and for what each party process was ever told.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TypedDict

import numpy as np
import pytest
import torch

from tests.deploy.scenario import (
    Scenario,
    make_scenario,
    party_alignment,
    run_launch,
    server_alignment,
    simulate_aligned,
)
from vfl.deploy.config import load_party_config, load_run_config
from vfl.deploy.data import load_labels, load_party_tables
from vfl.deploy.psi import hash_to_group
from vfl.results.files import RunDirectory
from vfl.transport.ledger import Ledger
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN

SPLITS = {SPLIT_TRAIN: "train", SPLIT_TEST: "test"}


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    scenario = make_scenario(tmp_path_factory.mktemp("deployed"), num_parties=2, epochs=2)
    result = run_launch(scenario)
    assert result.returncode == 0, result.stderr[-4000:]
    return scenario


def test_deployed_training_equals_the_in_process_simulation(
    deployed: Scenario, tmp_path: Path
) -> None:
    # Prepare
    checkpoint = torch.load(deployed.run_dir / "checkpoint.pt", weights_only=True)
    rounds = int(checkpoint["session"]["trainer"]["rounds"])

    # Execute
    simulation = simulate_aligned(deployed, tmp_path)

    # Assert: the same parameters, at the server and at every party
    head = simulation.trainer.server.head.state_dict()  # type: ignore[attr-defined]
    deployed_head = checkpoint["session"]["trainer"]["server"]["head"]
    for name, value in head.items():
        torch.testing.assert_close(deployed_head[name], value, atol=1e-6, rtol=0)
    for party in simulation.parties:
        state = torch.load(
            deployed.state_dir(party.party_id) / f"checkpoint-{rounds}.pt", weights_only=True
        )
        for name, value in party.model.state_dict().items():
            torch.testing.assert_close(state["role"]["model"][name], value, atol=1e-6, rtol=0)
    # Assert: the same ledger, byte for byte, and the same metrics
    assert (deployed.run_dir / "ledger.csv").read_text() == (tmp_path / "ledger.csv").read_text()
    local = RunDirectory(tmp_path).read_metrics()
    remote = RunDirectory(deployed.run_dir).read_metrics()
    assert [r["test_accuracy"] for r in remote] == pytest.approx(
        [r["test_accuracy"] for r in local], abs=1e-6
    )
    assert rounds > 0


def test_training_uses_exactly_the_intersection_in_one_order_at_every_holder(
    deployed: Scenario,
) -> None:
    # Prepare
    server = server_alignment(deployed)
    config, _ = load_run_config(deployed.run_toml)
    labels = load_labels(config.data)

    # Execute / Assert
    for split, name in SPLITS.items():
        order = list(labels.splits[split].ids[server.rows[split]])
        assert set(order) == deployed.common_ids(name)
        assert len(order) == len(deployed.common_ids(name))
        for party, toml in deployed.party_tomls.items():
            alignment = party_alignment(deployed, party)
            assert alignment.id == server.id
            ids = load_party_tables(load_party_config(toml).data)[split].ids
            assert list(ids[alignment.rows[split]]) == order
        assert order != sorted(order)  # the canonical order is not anyone's file order
    log = (deployed.run_dir / "logs" / "party-1.log").read_text()
    dropped = len(deployed.ids[1]["train"]) - len(deployed.common_ids("train"))
    assert f"{dropped} dropped" in log


def test_no_party_process_ever_received_another_holders_ids(deployed: Scenario) -> None:
    for party in deployed.party_tomls:
        # Prepare
        records = [json.loads(line) for line in deployed.audit_log(party).read_text().splitlines()]
        received = b"".join(base64.b64decode(r["data"]) for r in records if "data" in r)
        own = {x for split in ("train", "test") for x in deployed.ids[party][split]}
        foreign = {
            x
            for holder, by_split in deployed.ids.items()
            if holder != party
            for split in ("train", "test")
            for x in by_split[split]
        } - own

        # Execute / Assert
        assert {r["message"] for r in records} >= {"PsiStartRequest", "SetupRequest"}
        assert len(foreign) > 10
        for x in foreign:
            assert x.encode() not in received
            assert hash_to_group(x.encode()) not in received


def test_wire_bytes_are_the_ledger_plus_a_small_envelope_per_message(deployed: Scenario) -> None:
    # Prepare
    wire = json.loads((deployed.run_dir / "wire.json").read_text())
    ledger = Ledger()
    checkpoint = torch.load(deployed.run_dir / "checkpoint.pt", weights_only=True)
    ledger.load_state_dict(checkpoint["session"]["trainer"]["ledger"])

    # Execute
    on_wire = sum(wire[d][c]["bytes"] for d in ("sent", "received") for c in ("train", "eval"))
    in_ledger = ledger.total(phase="train") + ledger.total(phase="eval")
    messages = ledger.messages(phase="train") + ledger.messages(phase="eval")

    # Assert: 5 bytes of gRPC prefix and at most ~20 of chunk fields per message
    assert in_ledger + 5 * messages <= on_wire <= in_ledger + 30 * messages
    assert np.isclose(on_wire / in_ledger, 1, atol=0.1)


class Variant(TypedDict, total=False):
    """The ``make_scenario`` arguments a variant changes."""

    epochs: int
    train: list[str]
    bottom: list[str]
    extra: str


VARIANTS: dict[str, Variant] = {
    "pbm-secure-sum": {
        "bottom": ['output_activation = "tanh"'],
        "extra": '[model.head]\nfusion = "sum"\n[privacy]\nmechanism = "pbm"\n',
    },
    "shared-labels-scalar-q2": {
        "extra": '[protocol]\nlabels = "shared"\nlocal_steps = 2\n'
        '[compress.embedding]\nname = "scalar"\nbits = 4\n',
    },
    "eval-every-stop-at-target": {
        "epochs": 4,
        "train": ["eval_every = 3", "eval_at_start = false"],
        "extra": '[target]\nmetric = "test_accuracy"\nvalue = 0.8\nstop = true\n',
    },
    "sequential-topk-gradient": {
        "extra": '[protocol]\nschedule = "sequential"\n'
        '[compress.gradient]\nname = "topk"\nratio = 0.5\n',
    },
}


STOPS_AT_TARGET = {"eval-every-stop-at-target"}


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_protocol_options_run_unchanged_over_grpc(variant: str, tmp_path: Path) -> None:
    # Prepare
    scenario = make_scenario(tmp_path / "deployment", **VARIANTS[variant])

    # Execute
    result = run_launch(scenario)
    simulation = simulate_aligned(scenario, tmp_path / "reference")

    # Assert
    assert result.returncode == 0, result.stderr[-4000:]
    checkpoint = torch.load(scenario.run_dir / "checkpoint.pt", weights_only=True)
    if variant in STOPS_AT_TARGET:  # the run ends at an evaluation, after the last checkpoint
        summary = json.loads((scenario.run_dir / "summary.json").read_text())
        assert summary["target"]["reached"]["round"] == simulation.trainer.rounds
        assert summary["epochs"] < VARIANTS[variant]["epochs"]
    else:
        deployed_head = checkpoint["session"]["trainer"]["server"]["head"]
        for name, value in simulation.trainer.server.head.state_dict().items():  # type: ignore[attr-defined]
            torch.testing.assert_close(deployed_head[name], value, atol=1e-6, rtol=0)
    ledger = (tmp_path / "reference" / "ledger.csv").read_text()
    assert (scenario.run_dir / "ledger.csv").read_text() == ledger
    local = RunDirectory(tmp_path / "reference").read_metrics()
    remote = RunDirectory(scenario.run_dir).read_metrics()
    assert [(r["epoch"], r["round"]) for r in remote] == [(r["epoch"], r["round"]) for r in local]
    assert [r["test_accuracy"] for r in remote] == pytest.approx(
        [r["test_accuracy"] for r in local], abs=1e-6
    )
