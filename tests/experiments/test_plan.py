"""Whether a run folder already holds a run: done, resumable, superseded or new."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import tomli_w

from tests.experiments.sweeps import write_sweep
from vfl.config import load_config
from vfl.config.io import to_toml
from vfl.errors import ConfigError
from vfl.experiments.plan import plan, run_state
from vfl.experiments.spec import read_sweep, with_command_line


def write_finished(run_dir: Path, config_text: str) -> None:
    run_dir.mkdir()
    (run_dir / "config.toml").write_text(config_text)
    (run_dir / "summary.json").write_text("{}\n")


def test_keys_added_to_the_config_since_a_run_keep_it_done(tmp_path: Path) -> None:
    # Prepare: a run saved before the [lightweight] table and train.drop_last existed
    config = load_config(None, ["train.epochs=2"])
    saved = tomllib.loads(to_toml(config))
    del saved["lightweight"]
    del saved["train"]["drop_last"]
    write_finished(tmp_path / "run", tomli_w.dumps(saved))

    # Execute / Assert
    assert run_state(tmp_path / "run", config) == "done"


def test_a_changed_value_makes_the_run_superseded(tmp_path: Path) -> None:
    # Prepare
    write_finished(tmp_path / "run", to_toml(load_config(None, ["train.epochs=2"])))

    # Execute / Assert
    assert (
        run_state(tmp_path / "run", load_config(None, ["train.optimizer.lr=0.5"])) == "superseded"
    )


def test_a_saved_config_todays_loader_refuses_makes_the_run_superseded(tmp_path: Path) -> None:
    # Prepare: a key that no longer exists
    write_finished(tmp_path / "run", "[train]\nobsolete_key = 1\n")

    # Execute / Assert
    assert run_state(tmp_path / "run", load_config(None, [])) == "superseded"


def test_a_folder_is_new_only_when_it_holds_no_run_and_no_file_but_an_error(
    tmp_path: Path,
) -> None:
    # Prepare: an empty folder, a failed start's error.txt, and a folder of the user's own files
    for name in ("empty", "failed", "notes"):
        (tmp_path / name).mkdir()
    (tmp_path / "failed" / "error.txt").write_text("Traceback ...\n")
    (tmp_path / "notes" / "notes.txt").write_text("mine\n")
    config = load_config(None, [])

    # Execute
    names = ("missing", "empty", "failed", "notes")
    states = [run_state(tmp_path / name, config) for name in names]

    # Assert
    assert states == ["new", "new", "new", "superseded"]


def test_command_line_overrides_apply_to_every_run_after_its_setting(tmp_path: Path) -> None:
    # Prepare: a case that sets the epochs itself
    body = 'seeds = [0, 1]\nset = { "train.epochs" = 5 }\n[[case]]\nlabel = "long"\n'
    body += 'set = { "train.epochs" = 9 }\n[[case]]\nlabel = "plain"\n'
    spec = read_sweep(write_sweep(tmp_path, body))

    # Execute
    runs = plan(with_command_line(spec, ["train.epochs=1", "data.max_train_samples=64"]))

    # Assert
    assert [r.config.train.epochs for r in runs] == [1, 1, 1, 1]
    assert {r.config.data.max_train_samples for r in runs} == {64}
    assert [r.config.train.epochs for r in plan(spec)] == [9, 9, 5, 5]  # the control
    with pytest.raises(ConfigError, match=r"train\.seed"):
        with_command_line(spec, ["train.seed=3"])
