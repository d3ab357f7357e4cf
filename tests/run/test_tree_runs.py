"""``vfl run`` with ``protocol.name = "secureboost"``: a run folder per tree, as for neural runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.runs import vfl_process
from tests.run.trees import tree_config
from vfl.config import load_config
from vfl.errors import ConfigError
from vfl.run.runner import train

RECORD_KEYS = {
    "tree",
    "train_loss",
    "train_auc",
    "test_loss",
    "test_accuracy",
    "test_auc",
    "bytes_up",
    "bytes_down",
    "tree_bytes_up",
    "tree_bytes_down",
    "seconds",
    "wall_time",
}


def test_vfl_run_trains_secureboost_as_a_user_runs_it(tmp_path: Path) -> None:
    # Prepare
    config = tree_config(tmp_path)
    run_dir = tmp_path / "run"

    # Execute: a real process
    done = vfl_process("run", str(config), "--run-dir", str(run_dir), timeout=300)

    # Assert
    assert done.returncode == 0, done.stderr
    tree_lines = [line for line in done.stderr.splitlines() if line.startswith("tree ")]
    assert [line.split(" |")[0] for line in tree_lines] == ["tree 1/3", "tree 2/3", "tree 3/3"]
    assert done.stdout.startswith("final: test_loss ")
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["tree"] for r in records] == [1, 2, 3]
    assert all(set(r) >= RECORD_KEYS for r in records)
    train_rows = 160  # 200 rows, test_fraction 0.2
    assert all(r["tree_bytes_down"] > 2 * 512 * train_rows for r in records)  # 2 passive holders
    assert records[-1]["bytes_down"] == sum(r["tree_bytes_down"] for r in records)
    assert set(records[0]["seconds"]) >= {"encrypt", "histogram", "decrypt", "split_find"}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["protocol"], summary["trees"]) == ("secureboost", 3)
    assert summary["final"]["test_auc"] == records[-1]["test_auc"] > 0.5
    bundle = {p.name for p in (run_dir / "bundle").iterdir()}
    assert bundle == {"server", "party-1", "party-2", "party-3"}


def test_quiet_and_json_print_as_for_neural_runs(tmp_path: Path) -> None:
    # Prepare
    config = tree_config(tmp_path, trees=1)
    run_dir = tmp_path / "run"

    # Execute
    done = vfl_process(
        "run", str(config), "--run-dir", str(run_dir), "--quiet", "--json", timeout=300
    )

    # Assert: the summary on stdout, nothing on stderr
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads((run_dir / "summary.json").read_text())
    assert done.stderr == ""


def test_a_label_holder_without_columns_trains_on_the_others(tmp_path: Path) -> None:
    # Prepare
    config = load_config(tree_config(tmp_path, trees=1, label_party=0))

    # Execute
    summary = train(config, tmp_path / "run")

    # Assert: every holder of columns is passive; the label holder's bundle holds no columns
    assert summary["trees"] == 1
    assert not (tmp_path / "run" / "bundle" / "party-0").exists()
    manifest = json.loads((tmp_path / "run" / "bundle" / "server" / "manifest.json").read_text())
    assert (manifest["party"], manifest["holders"]) == (0, [1, 2, 3])


def test_a_refused_tree_run_leaves_no_folder(tmp_path: Path) -> None:
    # Prepare: an objective vfl run does not train on its classification data
    config = load_config(tree_config(tmp_path, trees=1), ["boost.objective=reg:squarederror"])
    run_dir = tmp_path / "run"

    # Execute
    with pytest.raises(ConfigError, match=r"^boost.objective: vfl run trains 'binary:logistic'"):
        train(config, run_dir)

    # Assert
    assert not run_dir.exists()
