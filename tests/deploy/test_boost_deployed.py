"""Deployed SecureBoost: PSI, set-up and training over gRPC + mTLS with real party runtimes.

The parties are ``PartyRuntime``s (what ``vfl party`` runs) in threads of this process, behind
``PartyLink``s that accept frames of at most 16 KB, so every tree's gradients travel in pieces;
the trees must equal those ``train_secureboost`` grows in one process on the same aligned rows.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.deploy.loopback import start_loopback
from tests.deploy.scenario import make_scenario
from vfl.boost import BoostParams, SecureBoostRun, secureboost_structure, train_secureboost
from vfl.boost.active import ActiveBooster
from vfl.boost.tree import SplitTable
from vfl.boost.wire_messages import BoostKeyAnnounce
from vfl.config import RunConfig
from vfl.deploy.alignment import Alignment, align
from vfl.deploy.boost_run import boost_plan, is_boost, save_checkpoint
from vfl.deploy.boost_server import BoostPlan, setup_holders, train_deployed
from vfl.deploy.config import load_party_config, load_run_config
from vfl.deploy.data import LabelTables, fit_features, load_labels, load_party_tables
from vfl.deploy.party import PartyRuntime
from vfl.deploy.run_folder import ALIGNMENT
from vfl.deploy.server import run_server
from vfl.deploy.state import PartyState
from vfl.errors import ConfigError, ProtocolError
from vfl.results.files import RunDirectory
from vfl.run import tree_checkpoint
from vfl.transport.base import PartyEndpoint
from vfl.transport.grpc_transport import GrpcTransport
from vfl.transport.retry import RetryPolicy
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN

LIMIT = 16 * 1024
PARAMS = BoostParams(num_trees=2, max_depth=2, learning_rate=0.3, max_bin=8)
PATIENT = RetryPolicy(attempts=1, timeout_s=60.0, backoff_s=0.05, max_backoff_s=0.1)


def deployment(
    tmp_path: Path,
) -> tuple[RunConfig, LabelTables, dict[int, PartyRuntime], GrpcTransport]:
    """Two parties of a small deployment, their runtimes behind gRPC + mutual TLS."""
    scenario = make_scenario(tmp_path / "d", num_parties=2, rows=(160, 60))
    config, _ = load_run_config(scenario.run_toml)
    labels = load_labels(config.data)
    runtimes = {}
    for party, toml in scenario.party_tomls.items():
        party_config = load_party_config(toml)
        tables = load_party_tables(party_config.data)
        runtimes[party] = PartyRuntime(
            party, tables, PartyState(tmp_path / f"s{party}", resume=False)
        )
    handlers = {p: PartyEndpoint(p, r.handle).handle_frame for p, r in runtimes.items()}
    loopback = start_loopback(scenario.pki, handlers, policy=PATIENT, max_bytes=LIMIT)
    return config, labels, runtimes, loopback.transport


def in_process(
    runtimes: dict[int, PartyRuntime],
    alignment: Alignment,
    labels: LabelTables,
    params: BoostParams,
) -> tuple[SecureBoostRun, np.ndarray]:
    """``train_secureboost`` on the parties' aligned, encoded rows; its test probabilities."""
    blocks, tests = {0: np.zeros((len(alignment.rows[SPLIT_TRAIN]), 0))}, {}
    for party, runtime in runtimes.items():
        saved = runtime.state.load_alignment(alignment.id)
        train = runtime.tables[SPLIT_TRAIN].take(saved.rows[SPLIT_TRAIN])
        test = runtime.tables[SPLIT_TEST].take(saved.rows[SPLIT_TEST])
        train_block, test_block, _ = fit_features(train, test)
        blocks[party], tests[party] = (
            train_block.numpy().astype(float),
            test_block.numpy().astype(float),
        )
    y = labels.aligned(alignment.rows)[SPLIT_TRAIN].numpy().astype(float)
    run = train_secureboost(y, blocks, params, active_party=0, workers=1)
    tests[0] = np.zeros((len(alignment.rows[SPLIT_TEST]), 0))
    return run, run.predict("test", tests)


def test_deployed_secureboost_grows_the_in_process_trees(tmp_path: Path) -> None:
    # Prepare: two parties of a small deployment, their runtimes behind gRPC + mutual TLS
    config, labels, runtimes, transport = deployment(tmp_path)
    ids = {split: table.ids for split, table in labels.splits.items()}

    # Execute
    alignment = align(transport, ids)
    setup_holders(transport, alignment, labels, PARAMS.max_bin, config=config)
    deployed = train_deployed(
        BoostPlan(PARAMS, workers=1), transport, alignment, labels, max_frame_bytes=LIMIT
    )

    # Assert: the in-process run on the same aligned, encoded rows grows the same trees
    run, expected_test = in_process(runtimes, alignment, labels, PARAMS)
    deployed_tables = {
        0: deployed.active.splits,
        **{p: r.boost.role.holder.splits for p, r in runtimes.items() if r.boost.role},
    }
    local_tables = {0: run.active.splits, **{p: h.splits for p, h in run.passives.items()}}
    assert [secureboost_structure(t, deployed_tables) for t in deployed.active.trees] == [
        secureboost_structure(t, local_tables) for t in run.active.trees
    ]
    assert np.array_equal(deployed.active.margins, run.active.margins)
    assert np.allclose(1 / (1 + np.exp(-deployed.test_margins)), expected_test, atol=1e-12)
    assert len(deployed.metrics) == PARAMS.num_trees and 0.5 < deployed.metrics[-1]["auc"] <= 1
    assert transport.ledger.messages(kind="BoostPart") > 0  # the gradients went in pieces
    assert all(r.bytes_down > 0 and r.bytes_up > 0 for r in deployed.reports)


def test_a_boost_message_before_the_set_up_is_refused(tmp_path: Path) -> None:
    # Prepare
    scenario = make_scenario(tmp_path / "d", num_parties=1, rows=(40, 20))
    tables = load_party_tables(load_party_config(scenario.party_tomls[1]).data)
    runtime = PartyRuntime(1, tables, PartyState(tmp_path / "s", resume=False))

    # Execute / Assert
    with pytest.raises(
        ProtocolError, match="party 1 got a BoostKeyAnnounce before the SecureBoost set-up"
    ):
        runtime.handle(BoostKeyAnnounce(0, b"\x01" * 256))


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "deploy" / "secureboost" / "RUN.toml"


def test_the_example_reads_as_a_secureboost_plan() -> None:
    # Execute
    config, deployment = load_run_config(EXAMPLE)
    plan = boost_plan(config)

    # Assert
    assert is_boost(config) and [p.id for p in deployment.parties] == [1, 2, 3]
    assert plan.params == BoostParams(num_trees=3, max_depth=3, learning_rate=0.3, max_bin=32)
    assert plan.key_bits == 2048 and plan.workers is None


def test_a_label_holder_with_columns_is_refused_in_a_deployment() -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match="active_party must be 0 in a deployment: the server"):
        load_run_config(EXAMPLE, ["protocol.active_party=1"])


def test_a_deployed_run_resumed_after_a_tree_grows_the_uninterrupted_trees(
    tmp_path: Path,
) -> None:
    # Prepare: one tree grown, each party and the server checkpointing after it
    config, labels, runtimes, transport = deployment(tmp_path)
    alignment = align(transport, {split: table.ids for split, table in labels.splits.items()})
    run_dir = RunDirectory(tmp_path / "run")
    setup_holders(transport, alignment, labels, PARAMS.max_bin, config=config)

    def checkpoint(active: ActiveBooster) -> None:
        save_checkpoint(config, transport, run_dir, active, elapsed=1.0)

    one = replace(PARAMS, num_trees=1)
    first = train_deployed(
        BoostPlan(one, workers=1),
        transport,
        alignment,
        labels,
        max_frame_bytes=LIMIT,
        after_tree=checkpoint,
    )

    # Execute: the parties set up afresh from their rows and their checkpoints (as restarted
    # processes are), the server from its checkpoint, and the second tree grown
    setup_holders(transport, alignment, labels, PARAMS.max_bin, config=config, restore_trees=1)
    resumed = train_deployed(
        BoostPlan(PARAMS, workers=1),
        transport,
        alignment,
        labels,
        max_frame_bytes=LIMIT,
        resume=tree_checkpoint.load(run_dir),
    )

    # Assert: the trees, margins and test predictions of an uninterrupted run
    run, expected_test = in_process(runtimes, alignment, labels, PARAMS)
    deployed_tables = {0: SplitTable()}
    for party, runtime in runtimes.items():
        assert runtime.boost.role is not None
        deployed_tables[party] = runtime.boost.role.holder.splits
        assert runtime.state.checkpoint_rounds() == [1]
    local_tables = {0: run.active.splits, **{p: h.splits for p, h in run.passives.items()}}
    assert len(first.active.trees) == 1 and len(resumed.reports) == 1
    assert [secureboost_structure(t, deployed_tables) for t in resumed.active.trees] == [
        secureboost_structure(t, local_tables) for t in run.active.trees
    ]
    assert np.array_equal(resumed.active.margins, run.active.margins)
    assert np.allclose(1 / (1 + np.exp(-resumed.test_margins)), expected_test, atol=1e-12)


def test_a_deployed_secureboost_resume_without_a_checkpoint_is_refused(tmp_path: Path) -> None:
    # Prepare: a run folder with an alignment (PSI done) but no tree finished; the example's
    # run config with a deployment whose certificates exist
    config, _ = load_run_config(EXAMPLE)
    scenario = make_scenario(tmp_path / "d", num_parties=2, rows=(40, 20))
    _, deployment_config = load_run_config(scenario.run_toml)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / ALIGNMENT).write_bytes(b"")

    # Execute / Assert: refused before anything is written
    with pytest.raises(ConfigError, match="no tree checkpoint in"):
        run_server(config, deployment_config, run_dir, resume=True)
    assert sorted(p.name for p in run_dir.iterdir()) == [ALIGNMENT]
