"""A real deployment: ``vfl launch`` runs the server and two parties as separate processes.

One run (module fixture) on tables whose IDs overlap only partly and are listed in different
orders is checked against the in-process simulator (same parameters, same ledger), for its
alignment, and for what each party process was ever told. A second fresh deployment of the same
data and seed (shown on the console, where the first ran --quiet) must end with exactly the same
parameters.
"""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pytest
import torch

from tests.deploy.scenario import (
    ROOT,
    Scenario,
    deploy_command,
    free_port,
    make_scenario,
    party_alignment,
    run_launch,
    server_alignment,
    simulate_aligned,
    start_party,
)
from vfl.deploy.config import load_party_config, load_run_config
from vfl.deploy.data import load_labels, load_party_tables
from vfl.deploy.psi_group import hash_to_group
from vfl.results.files import RunDirectory
from vfl.run.console import describe as describe_epoch
from vfl.run.console import final_line
from vfl.transport.ledger import Ledger
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN

SPLITS = {SPLIT_TRAIN: "train", SPLIT_TEST: "test"}


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    scenario = make_scenario(tmp_path_factory.mktemp("deployed"), num_parties=2, epochs=2)
    result = run_launch(scenario, "--quiet")
    assert result.returncode == 0, result.stderr[-4000:]
    (scenario.root / "launch.out").write_text(result.stdout)
    (scenario.root / "launch.err").write_text(result.stderr)
    return scenario


@dataclass(frozen=True)
class Launched:
    scenario: Scenario
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def redeployed(tmp_path_factory: pytest.TempPathFactory) -> Launched:
    """The same data, seed and config as ``deployed``, freshly deployed, its progress shown."""
    scenario = make_scenario(tmp_path_factory.mktemp("redeployed"), num_parties=2, epochs=2)
    result = run_launch(scenario, "--set=output.progress=true")
    assert result.returncode == 0, result.stderr[-4000:]
    return Launched(scenario, result.stdout, result.stderr)


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


def test_two_fresh_deployments_of_the_same_data_and_seed_end_with_identical_parameters(
    deployed: Scenario, redeployed: Launched
) -> None:
    # Prepare
    again = redeployed.scenario
    first = torch.load(deployed.run_dir / "checkpoint.pt", weights_only=True)["session"]
    second = torch.load(again.run_dir / "checkpoint.pt", weights_only=True)["session"]
    rounds = int(first["trainer"]["rounds"])

    # Execute / Assert: fresh secrets (control), yet the same rows in the same order
    assert server_alignment(deployed).id != server_alignment(again).id
    for split in SPLITS:
        assert np.array_equal(
            server_alignment(deployed).rows[split], server_alignment(again).rows[split]
        )
    # Assert: identical parameters, bit for bit, at the server and at every party
    for name, value in first["trainer"]["server"]["head"].items():
        assert torch.equal(second["trainer"]["server"]["head"][name], value), name
    for party in deployed.party_tomls:
        mine = torch.load(deployed.state_dir(party) / f"checkpoint-{rounds}.pt", weights_only=True)
        theirs = torch.load(again.state_dir(party) / f"checkpoint-{rounds}.pt", weights_only=True)
        for name, value in mine["role"]["model"].items():
            assert torch.equal(theirs["role"]["model"][name], value), (party, name)
    assert (deployed.run_dir / "ledger.csv").read_text() == (
        again.run_dir / "ledger.csv"
    ).read_text()


def epoch_lines(records: list[dict[str, Any]]) -> list[str]:
    """The lines ``vfl run`` prints for ``records``, without their wall time (not recorded)."""
    return [describe_epoch(r).rpartition(" | ")[0] for r in records if r["train_loss"] is not None]


def without_time(lines: list[str]) -> list[str]:
    return [line.rpartition(" | ")[0] for line in lines if line.startswith("epoch ")]


def test_launch_prints_the_per_epoch_lines_of_vfl_run(
    deployed: Scenario, redeployed: Launched
) -> None:
    # Prepare: the lines vfl run prints, from the deployment's own metrics
    expected = epoch_lines(RunDirectory(redeployed.scenario.run_dir).read_metrics())

    # Execute
    printed = [line for line in redeployed.stderr.splitlines() if line.startswith("epoch ")]
    logged = (redeployed.scenario.run_dir / "logs" / "server.log").read_text().splitlines()

    # Assert: one line per epoch, with metrics, traffic and its wall and training time, on
    # launch's standard error and in the server's log (launch shows the server's events)
    assert without_time(printed) == expected and len(expected) == 2
    assert all(" | train_traffic " in line and "test_accuracy" in line for line in printed)
    assert all(line.endswith(" s)") and " s (training " in line for line in printed)
    assert without_time(logged) == expected
    # Assert: standard output is the result alone: the final line
    assert redeployed.stdout.splitlines() == [
        f"final: {line.partition('final: ')[2]}" for line in redeployed.stdout.splitlines()
    ]
    assert len(redeployed.stdout.splitlines()) == 1


def test_launch_prints_the_set_up_phases_in_order_and_times_them_in_the_summary(
    redeployed: Launched,
) -> None:
    # Prepare
    lines = redeployed.stderr.splitlines()
    summary = json.loads((redeployed.scenario.run_dir / "summary.json").read_text())

    # Execute: each phase's first line, in the order printed
    phases = [  # the parties start with the server and dial it once it listens
        "loaded torch and vfl once for the server and 2 parties (",
        "started the server (pid ",
        "started party-1 (pid ",
        "party 1 connected (",
        "PSI: aligning ",
        "PSI done in ",
        "parties set up (",
        "untrained model | test_loss",
        "epoch 1 | ",
        "epoch 2 | ",
    ]
    where = [next((i for i, line in enumerate(lines) if phase in line), -1) for phase in phases]

    # Assert: as they happen, each with the launch's clock; the summary keeps the set-up times
    assert -1 not in where and where == sorted(where), lines
    listening = next(i for i, line in enumerate(lines) if "server listening on port " in line)
    assert where[1] < listening < where[3], lines
    psi = next(line for line in lines if "PSI done in " in line)
    assert "IDs every party holds: train " in psi and " test " in psi
    assert set(summary["setup"]) == {"start_s", "connect_s", "psi_s", "parties_setup_s", "total_s"}
    assert summary["setup"]["psi_s"] > 0
    assert summary["setup"]["total_s"] == pytest.approx(
        sum(v for k, v in summary["setup"].items() if k != "total_s"), abs=0.01
    )


def test_a_quiet_launch_prints_its_final_line_and_nothing_else(deployed: Scenario) -> None:
    # Prepare: the control of the two tests above
    summary = json.loads((deployed.run_dir / "summary.json").read_text())

    # Execute
    out = (deployed.root / "launch.out").read_text()
    err = (deployed.root / "launch.err").read_text()

    # Assert
    assert out == final_line(summary, deployed.run_dir) + "\n"
    assert err == ""


@pytest.mark.slow
def test_vfl_server_prints_the_per_epoch_lines_of_vfl_run(tmp_path: Path) -> None:
    # Prepare: the server's standard output apart from its log (standard error)
    scenario = make_scenario(tmp_path, epochs=3)
    address = f"127.0.0.1:{free_port()}"
    args = ["server", "--config", str(scenario.run_toml), "--run-dir", str(scenario.run_dir)]
    args += [f"--set=deployment.listen={address}", "--set=output.progress=true"]
    out, err = tmp_path / "server.out", tmp_path / "server.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        server = subprocess.Popen(
            deploy_command(*args),
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            cwd=tmp_path,
        )
    processes = [server, *(start_party(scenario, party, address) for party in (1, 2))]

    # Execute
    try:
        statuses = [process.wait(120) for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()

    # Assert: the epoch loop's line for each epoch, on standard output
    assert statuses == [0, 0, 0], err.read_text()[-3000:]
    expected = epoch_lines(RunDirectory(scenario.run_dir).read_metrics())
    assert without_time(err.read_text().splitlines()) == expected and len(expected) == 3
    assert out.read_text().startswith("final: ")


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
NOISY = {"pbm-secure-sum"}
"""Variants whose deployed noise comes from the operating system: parameters differ by design."""


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
    elif variant not in NOISY:
        deployed_head = checkpoint["session"]["trainer"]["server"]["head"]
        for name, value in simulation.trainer.server.head.state_dict().items():  # type: ignore[attr-defined]
            torch.testing.assert_close(deployed_head[name], value, atol=1e-6, rtol=0)
    ledger = (tmp_path / "reference" / "ledger.csv").read_text()
    assert (scenario.run_dir / "ledger.csv").read_text() == ledger
    local = RunDirectory(tmp_path / "reference").read_metrics()
    remote = RunDirectory(scenario.run_dir).read_metrics()
    assert [(r["epoch"], r["round"]) for r in remote] == [(r["epoch"], r["round"]) for r in local]
    if variant in NOISY:
        assert_noisy_metrics_agree(remote, local)
    else:
        assert [r["test_accuracy"] for r in remote] == pytest.approx(
            [r["test_accuracy"] for r in local], abs=1e-6
        )


def assert_noisy_metrics_agree(remote: list[dict[str, Any]], local: list[dict[str, Any]]) -> None:
    """What still holds when both runs draw their own noise: the same privacy spent, every
    metric finite and in range, and the deployment's metrics near the simulation's."""
    assert [r["epsilon"] for r in remote] == [r["epsilon"] for r in local]
    assert remote[-1]["epsilon"] > 0 and remote[0]["delta"] == local[0]["delta"]
    for record in remote:
        assert 0 <= record["test_accuracy"] <= 1
        assert math.isfinite(record["test_loss"]) and record["test_loss"] > 0
        assert record["train_loss"] is None or math.isfinite(record["train_loss"])
    assert remote[-1]["test_accuracy"] == pytest.approx(local[-1]["test_accuracy"], abs=0.15)
    assert remote[-1]["test_loss"] == pytest.approx(local[-1]["test_loss"], abs=0.15)
