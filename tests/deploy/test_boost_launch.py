"""SecureBoost deployed as the user runs it: ``vfl launch`` of the Adult example, then prediction.

Slow (about two minutes on 2 shared cores): the example's tables for 400 Adult training rows,
``vfl certs``, ``vfl launch`` with 2 trees, then ``vfl predict`` of every holder's bundle gathered
in one folder, ``vfl launch --predict``, ``vfl serve`` with ``vfl party --serve`` and
``vfl score``, every one a process of its own. The trees must equal those ``train_secureboost``
grows in one process on the same aligned, encoded rows, and four prediction paths (that
in-process model, ``vfl predict`` from the bundles, deployed batch prediction, and ``vfl serve``)
must agree to 1e-9 on Adult's test rows.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.cli.runs import vfl_process
from vfl.boost import BoostParams, SecureBoostRun, secureboost_structure, train_secureboost
from vfl.boost.tree import SplitTable
from vfl.deploy.alignment import Alignment
from vfl.deploy.config import load_party_config, load_run_config
from vfl.deploy.data import fit_features, load_labels, load_party_tables
from vfl.deploy.run_folder import ALIGNMENT
from vfl.run.tree_bundles import load_holder, load_label_holder
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "deploy" / "secureboost"
ROWS, TREES = 400, 2
PARAMS = BoostParams(num_trees=TREES, max_depth=3, learning_rate=0.3, max_bin=32)
POSITIVE = "probability_>50K"


def make_example(folder: Path) -> Path:
    """The example's configs, tables for ``ROWS`` training rows and a test PKI in ``folder``."""
    for name in ("RUN.toml", "party1.toml", "party2.toml", "party3.toml"):
        shutil.copy(EXAMPLE / name, folder / name)
    rows = ["--rows", str(ROWS)]
    made = subprocess.run(
        [sys.executable, str(EXAMPLE / "make_data.py"), "--out", str(folder / "data"), *rows],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    certs = ["certs", "--out", str(folder / "certs"), "--parties", "1", "2", "3"]
    assert vfl_process(*certs, "--clients", "scorer", timeout=120).returncode == 0
    return folder / "RUN.toml"


def in_process(
    folder: Path, run_dir: Path
) -> tuple[SecureBoostRun, dict[int, np.ndarray], np.ndarray]:
    """``train_secureboost`` on the deployment's aligned, encoded rows; its test blocks and IDs."""
    config, _ = load_run_config(folder / "RUN.toml")
    labels = load_labels(config.data)
    alignment = Alignment.load(run_dir / ALIGNMENT)
    train_rows = len(alignment.rows[SPLIT_TRAIN])
    blocks, tests = {0: np.zeros((train_rows, 0))}, {0: np.zeros((len(alignment.rows[1]), 0))}
    for party in (1, 2, 3):
        party_config = load_party_config(folder / f"party{party}.toml")
        tables = load_party_tables(party_config.data)
        state = Path(party_config.state_dir)
        own = Alignment.load(next(state.glob("alignment-*.pt")))
        assert own.id == alignment.id
        train = tables[SPLIT_TRAIN].take(own.rows[SPLIT_TRAIN])
        test = tables[SPLIT_TEST].take(own.rows[SPLIT_TEST])
        train_block, test_block, _ = fit_features(train, test)
        blocks[party] = train_block.numpy().astype(np.float64)
        tests[party] = test_block.numpy().astype(np.float64)
    y = labels.aligned(alignment.rows)[SPLIT_TRAIN].numpy().astype(np.float64)
    run = train_secureboost(y, blocks, PARAMS, active_party=0, workers=1)
    test_ids = labels.splits[SPLIT_TEST].ids[alignment.rows[SPLIT_TEST]]
    return run, tests, np.asarray([str(i) for i in test_ids])


def assert_the_bundles_hold_the_trees_of(run: SecureBoostRun, folder: Path, run_dir: Path) -> None:
    """Every holder's bundle of the deployed run holds ``run``'s trees, split for split."""
    label_holder = load_label_holder(run_dir / "bundle" / "server")
    holders = {
        p: load_holder(folder / "state" / f"party{p}" / "bundle" / f"party-{p}") for p in (1, 2, 3)
    }
    deployed_tables = {0: SplitTable(), **{p: b.splits for p, b in holders.items()}}
    local_tables = {0: run.active.splits, **{p: h.splits for p, h in run.passives.items()}}
    assert len(label_holder.trees) == TREES
    assert [secureboost_structure(t, deployed_tables) for t in label_holder.trees] == [
        secureboost_structure(t, local_tables) for t in run.active.trees
    ]
    for deployed_tree, local_tree in zip(label_holder.trees, run.active.trees, strict=True):
        assert np.array_equal(deployed_tree.leaf_weights(), local_tree.leaf_weights())


def gathered(folder: Path, run_dir: Path, target: Path) -> Path:
    """The server's bundle and every party's, copied into ``target/bundle`` for ``vfl predict``."""
    shutil.copytree(run_dir / "bundle" / "server", target / "bundle" / "server")
    for party in (1, 2, 3):
        source = folder / "state" / f"party{party}" / "bundle" / f"party-{party}"
        shutil.copytree(source, target / "bundle" / f"party-{party}")
    return target


def serve_and_score(folder: Path, run_dir: Path, ids: list[str]) -> dict[str, float]:
    """``vfl serve`` and three ``vfl party --serve`` processes; ``vfl score`` of ``ids``."""
    port_file = folder / "serve.port"
    command = [sys.executable, "-m", "vfl.cli"]
    where = ["--port-file", str(port_file), "--set", "deployment.listen=127.0.0.1:0"]
    server = subprocess.Popen(
        [*command, "serve", "--config", str(folder / "RUN.toml"), "--model", str(run_dir), *where],
        stdout=subprocess.DEVNULL,
        stderr=(folder / "serve.log").open("wb"),
    )
    processes = [server]
    try:
        deadline = time.monotonic() + 120
        while not port_file.exists() or not port_file.read_text().strip():
            assert server.poll() is None and time.monotonic() < deadline, (
                folder / "serve.log"
            ).read_text()
            time.sleep(0.2)
        address = f"127.0.0.1:{port_file.read_text().strip()}"
        for party in (1, 2, 3):
            party_args = ["party", "--config", str(folder / f"party{party}.toml"), "--serve"]
            processes.append(
                subprocess.Popen(
                    [*command, *party_args, "--server", address],
                    stdout=subprocess.DEVNULL,
                    stderr=(folder / f"serve-party-{party}.log").open("wb"),
                )
            )
        deadline = time.monotonic() + 120
        while "every party is set up from its bundle" not in (folder / "serve.log").read_text():
            assert time.monotonic() < deadline, (folder / "serve.log").read_text()
            time.sleep(0.2)
        certs = folder / "certs"
        score = ["score", "--ca", str(certs / "ca.pem"), "--server-name", "localhost"]
        score += [
            "--cert",
            str(certs / "client-scorer.pem"),
            "--key",
            str(certs / "client-scorer.key"),
        ]
        answer = vfl_process(*score, "--timeout-s", "120", address, *ids, timeout=300)
        assert answer.returncode == 0, answer.stderr + (folder / "serve.log").read_text()
        results = json.loads(answer.stdout)["results"]
        return {entry["id"]: entry["probabilities"][">50K"] for entry in results}
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)


def test_launch_grows_the_in_process_trees_and_four_prediction_paths_agree(
    tmp_path: Path,
) -> None:
    # Prepare
    run_toml = make_example(tmp_path)
    run_dir = tmp_path / "runs" / "secureboost-example"

    # Execute: training as the user runs it
    trained = vfl_process("launch", str(run_toml), "--set", f"boost.num_trees={TREES}", timeout=900)

    # Assert: phases, a line per tree, the final line
    assert trained.returncode == 0, trained.stderr
    for line in ("PSI done in", "parties set up as SecureBoost holders", "tree 1/2 | test_loss"):
        assert line in trained.stderr
    assert trained.stdout.startswith("final: test_loss")
    # Assert: the deployed trees are the in-process trees, split for split, weight for weight
    run, tests, test_ids = in_process(tmp_path, run_dir)
    assert_the_bundles_hold_the_trees_of(run, tmp_path, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    expected = run.predict("test", tests)
    assert summary["final"]["test_auc"] > 0.8

    # Execute: vfl predict from the gathered bundles, deployed batch prediction, vfl serve
    model = gathered(tmp_path, run_dir, tmp_path / "model")
    joined = tmp_path / "data" / "joined_test.csv"  # make_data.py's: all holders' columns
    bundled_out = tmp_path / "bundled.csv"
    from_bundles = vfl_process(
        "predict", str(model), "--data", str(joined), "--out", str(bundled_out), timeout=600
    )
    assert from_bundles.returncode == 0, from_bundles.stderr
    out = tmp_path / "predictions.csv"
    predicted = vfl_process(
        "launch", str(run_toml), "--predict", "--model", str(run_dir),
        "--data", str(tmp_path / "data" / "labels_test.csv"), "--out", str(out),
        timeout=900,
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr
    batch = pd.read_csv(out, dtype={"id": str}).set_index("id")[POSITIVE]
    scored_ids = list(test_ids[:200])
    served = serve_and_score(tmp_path, run_dir, scored_ids)

    # Assert: the four paths agree to 1e-9
    assert len(batch) == len(test_ids) and not (tmp_path / "predictions-unscored.csv").exists()
    assert np.abs(batch.loc[list(test_ids)].to_numpy() - expected).max() <= 1e-9
    bundled = pd.read_csv(bundled_out, dtype={"id": str}).set_index("id")[POSITIVE]
    assert len(bundled) == len(test_ids)
    assert np.abs(bundled.loc[list(test_ids)].to_numpy() - expected).max() <= 1e-9
    assert f"auc {summary['final']['test_auc']:.4f}" in from_bundles.stdout
    assert np.abs(np.array([served[i] for i in scored_ids]) - expected[:200]).max() <= 1e-9
    assert len(set(np.round(expected, 6))) > 3  # not a constant model (a vacuous agreement)


def test_launch_resumed_after_a_tree_grows_the_uninterrupted_trees(tmp_path: Path) -> None:
    # Prepare: the example trained for one tree, as the user runs it
    run_toml = make_example(tmp_path)
    run_dir = tmp_path / "runs" / "secureboost-example"
    first = vfl_process("launch", str(run_toml), "--set", "boost.num_trees=1", timeout=900)
    assert first.returncode == 0, first.stderr
    first_summary = (run_dir / "summary.json").read_text()

    # Execute: resumed for the second tree
    resumed = vfl_process(
        "launch", str(run_toml), "--resume", "--set", f"boost.num_trees={TREES}", timeout=900
    )

    # Assert: one tree grown, the trees of an uninterrupted in-process run, earlier files kept
    assert resumed.returncode == 0, resumed.stderr
    assert "tree 2/2 | test_loss" in resumed.stderr and "tree 1/2" not in resumed.stderr
    run, _, _ = in_process(tmp_path, run_dir)
    assert_the_bundles_hold_the_trees_of(run, tmp_path, run_dir)
    kept = [p for p in run_dir.iterdir() if p.name.startswith("summary.json.resumed-")]
    assert len(kept) == 1 and kept[0].read_text() == first_summary
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == TREES
    assert any(p.name.startswith("server.replaced-") for p in (run_dir / "bundle").iterdir())
