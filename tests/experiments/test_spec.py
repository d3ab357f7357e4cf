"""Sweep files: validation errors, grid expansion, labels and resolved configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.experiments.sweeps import write_sweep
from vfl.errors import ConfigError
from vfl.experiments.plan import expand, plan, toml_value
from vfl.experiments.spec import read_sweep

GRID = """
seeds = [0, 1, 2]
set = { "train.epochs" = 2 }
[grid]
"train.optimizer.lr" = [0.01, 0.03]
"train.batch_size" = [16, 32]
"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("seed = [0]\n", "unknown key 'seed' (did you mean 'seeds'?)"),
        ("seeds = 3\n", "seeds must be an array, got 3 (int)"),
        ("seeds = []\n", "seeds: must list at least one seed"),
        ("seeds = [1, 1]\n", "seeds: must not repeat, got [1, 1]"),
        ('workers = "2"\n', "workers must be an integer, got '2' (str)"),
        ("workers = 0\n", "workers: must be >= 1, got 0"),
        ('set = { "train.seed" = 4 }\n', "'train.seed' is set by the sweep's `seeds` list"),
        ('set = "train.epochs=2"\n', "set must be a table of dotted config keys"),
        ('[grid]\n"train.batch_size" = 32\n', "grid.train.batch_size must be a non-empty array"),
        ('[grid]\n"train.batch_size" = []\n', "grid.train.batch_size must be a non-empty array"),
        ('[grid]\n"train.batch_size" = [8, 8]\n', "grid.train.batch_size repeats a value"),
        ("[target]\nvalue = 0.9\n", "target.metric: required in a [target] table"),
        ('[target]\nmetric = "accuracy"\n', "target.metric: must be one of"),
        ('[report]\nmetric = "f1"\n', "report.metric: must be one of"),
        (
            '[report]\nlabels = ["x"]\n',
            "unknown key 'report.labels' (did you mean 'report.label'?)",
        ),
        ('[report]\nlabel = ["train.epochs"]\n', "report.label: 'train.epochs' is not a grid key"),
        ('[[case]]\nname = "x"\n', "unknown key 'name' in case[0]; valid keys: label, set"),
        ("[[case]]\nlabel = 3\n", "case[0].label must be a string, got 3"),
        ("[[case]]\n", "case[0] needs a `label` or a `set` table"),
    ],
)
def test_invalid_sweep_files_name_the_key_and_what_is_valid(
    tmp_path: Path, body: str, message: str
) -> None:
    # Prepare
    path = write_sweep(tmp_path, body)

    # Execute
    with pytest.raises(ConfigError) as error:
        read_sweep(path)

    # Assert
    assert message in str(error.value)


def test_a_sweep_file_needs_a_base_and_a_folder_name(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "sweep.toml"
    path.write_text('name = "a/b"\nbase = "run.toml"\n')

    # Execute
    with pytest.raises(ConfigError) as error:
        read_sweep(path)

    # Assert
    assert "name: must be a folder name (no '/'), got 'a/b'" in str(error.value)


def test_the_grid_expands_to_its_product_in_file_order(tmp_path: Path) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, GRID))

    # Execute
    settings = expand(spec)

    # Assert
    assert [s.label for s in settings] == [
        "lr=0.01, batch_size=16",
        "lr=0.01, batch_size=32",
        "lr=0.03, batch_size=16",
        "lr=0.03, batch_size=32",
    ]
    assert settings[1].name == "lr=0.01,batch_size=32"
    assert settings[1].overrides == (("train.optimizer.lr", 0.01), ("train.batch_size", 32))


def test_every_setting_runs_once_per_seed_with_its_overrides(tmp_path: Path) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, GRID))

    # Execute
    runs = plan(spec)

    # Assert
    assert len(runs) == 4 * 3
    assert [r.name for r in runs[:3]] == [f"lr=0.01,batch_size=16__seed{s}" for s in (0, 1, 2)]
    last = runs[-1].config
    assert (last.train.seed, last.train.optimizer.lr, last.train.batch_size) == (2, 0.03, 32)
    assert last.train.epochs == 2  # the sweep's `set`
    assert last.data.name == "table"  # the base config
    assert (last.output.name, last.output.progress) == ("lr=0.03,batch_size=32__seed2", False)


def test_report_label_picks_and_orders_the_label_keys(tmp_path: Path) -> None:
    # Prepare
    body = GRID.replace("[grid]", '[report]\nlabel = ["train.batch_size"]\n[grid]')
    body = body.replace("[0.01, 0.03]", "[0.01]")
    spec = read_sweep(write_sweep(tmp_path, body))

    # Execute
    labels = [s.label for s in expand(spec)]

    # Assert
    assert labels == ["batch_size=16", "batch_size=32"]


def test_labels_that_collide_are_refused(tmp_path: Path) -> None:
    # Prepare: the label leaves out the key that tells the settings apart
    body = GRID.replace("[grid]", '[report]\nlabel = ["train.batch_size"]\n[grid]')
    spec = read_sweep(write_sweep(tmp_path, body))

    # Execute
    with pytest.raises(ConfigError) as error:
        expand(spec)

    # Assert
    assert "would share the run folder 'batch_size=16'" in str(error.value)


def test_cases_follow_the_grid_with_their_own_overrides(tmp_path: Path) -> None:
    # Prepare
    body = GRID + '[[case]]\nlabel = "sgd baseline"\nset = { train.optimizer.name = "sgd" }\n'
    body += '[[case]]\nset = { "model.bottom.hidden" = [16, 8] }\n'
    spec = read_sweep(write_sweep(tmp_path, body))

    # Execute
    settings = expand(spec)
    runs = plan(spec)

    # Assert
    assert [(s.label, s.name) for s in settings[4:]] == [
        ("sgd baseline", "sgd-baseline"),
        ("hidden=[16, 8]", "hidden=16,8"),
    ]
    case_config = runs[4 * 3].config
    assert case_config.train.optimizer.name == "sgd"
    assert case_config.train.optimizer.lr == 0.02  # the base value: cases are outside the grid
    assert runs[-1].config.model.bottom.hidden == (16, 8)


def test_a_sweep_without_grid_or_cases_runs_the_base_config(tmp_path: Path) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, "seeds = [3]\n"))

    # Execute
    runs = plan(spec)

    # Assert
    assert [r.name for r in runs] == ["run__seed3"]


def test_a_bad_config_value_in_any_setting_stops_the_plan(tmp_path: Path) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, '[grid]\n"train.batch_size" = [16, 0]\n'))

    # Execute
    with pytest.raises(ConfigError) as error:
        plan(spec)

    # Assert
    assert "setting 'batch_size=0': train.batch_size: must be >= 1, got 0" in str(error.value)


def test_an_unknown_config_key_is_named(tmp_path: Path) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, '[grid]\n"train.optimiser.lr" = [0.1]\n'))

    # Execute
    with pytest.raises(ConfigError) as error:
        plan(spec)

    # Assert
    assert "unknown key 'train.optimiser'" in str(error.value)


def test_the_base_path_is_relative_to_the_sweep_file(tmp_path: Path) -> None:
    # Prepare
    path = write_sweep(tmp_path, "")

    # Execute
    spec = read_sweep(path)

    # Assert
    assert spec.base == tmp_path / "run.toml"
    assert spec.folder == tmp_path / "out" / "tiny"
    assert spec.metric == "test_accuracy"


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.001, "0.001"), (1e-5, "1e-05"), ("adam", '"adam"'), ([64, 32], "[64, 32]"), (True, "true")],
)
def test_override_values_are_written_as_toml(value: object, text: str) -> None:
    assert toml_value(value) == text
