"""The protocol registry: every registered protocol builds its loop from ``protocol.name``, the
name sets the settings that used to choose it, and those settings alone still choose it with one
deprecation line."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.conftest import make_vertical_data
from tests.run.variants import write_run_config
from vfl.config import load_config
from vfl.config.mechanisms import MECHANISMS
from vfl.config.protocols import PROTOCOLS
from vfl.errors import ConfigError
from vfl.protocol.loop import ServerLoop
from vfl.registry import resolve
from vfl.run.compose import build_session

PBM_MODEL = ("model.head.fusion=sum", "model.bottom.output_activation=tanh")


def _overrides(name: str) -> list[str]:
    asking = [m for m, entry in MECHANISMS.items() if entry.protocol == name]
    mechanism = [f"privacy.mechanism={asking[0]}", *PBM_MODEL] if asking else []
    return [f"protocol.name={name}", "model.bottom.embedding_dim=2", *mechanism]


LOOP_PROTOCOLS = [name for name in PROTOCOLS.names() if PROTOCOLS[name].runner == "server_loop"]


@pytest.mark.parametrize("name", LOOP_PROTOCOLS)
def test_every_registered_protocol_builds_its_loop_from_its_name(name: str) -> None:
    # Prepare
    entry = PROTOCOLS[name]
    data = make_vertical_data(num_train=16, num_test=8, widths=(3, 4))
    config = load_config(None, _overrides(name))

    # Execute
    session = build_session(config, data)

    # Assert
    assert type(session.trainer) is resolve(entry.loop)
    assert isinstance(session.trainer, ServerLoop)
    assert (config.protocol.labels, config.protocol.schedule) == (entry.labels, entry.schedule)


@pytest.mark.parametrize(
    ("old", "name"),
    [("protocol.labels=shared", "shared_labels"), ("protocol.schedule=sequential", "sequential")],
)
def test_the_old_settings_choose_the_same_protocol_with_a_deprecation(old: str, name: str) -> None:
    # Execute
    with pytest.warns(FutureWarning, match=f"set protocol.name = '{name}'"):
        config = load_config(None, [old])

    # Assert
    assert config == load_config(None, [f"protocol.name={name}"])


def test_the_default_settings_warn_of_nothing() -> None:
    # Execute
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = load_config(None, [])

    # Assert
    assert config.protocol.name == "auto"


def test_a_setting_that_contradicts_the_name_is_refused() -> None:
    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, ["protocol.name=split", "protocol.labels=shared"])

    # Assert
    assert str(error.value).startswith("protocol.labels: 'shared' contradicts protocol.name")


def test_a_mechanisms_protocol_runs_only_under_it() -> None:
    # Execute
    with pytest.raises(ConfigError) as alone:
        load_config(None, ["protocol.name=private_sum"])
    with pytest.raises(ConfigError) as other:
        load_config(None, ["protocol.name=split", "privacy.mechanism=pbm", *PBM_MODEL])

    # Assert
    assert "runs only under privacy.mechanism = 'pbm'" in str(alone.value)
    assert "runs under protocol 'private_sum', not 'split'" in str(other.value)


def test_vfl_run_says_the_deprecation_in_one_line(tmp_path: Path) -> None:
    # Prepare
    config = write_run_config(tmp_path)
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "vfl.cli", "run", str(config), "--run-dir", str(run_dir)]

    # Execute: a real process, as a user runs it
    done = subprocess.run(
        [*command, "--set", "train.epochs=1", "--set", "protocol.labels=shared", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )

    # Assert
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "deprecated" in line]
    assert lines == [
        "vfl: warning: protocol.labels = 'shared' without protocol.name is deprecated: set"
        " protocol.name = 'shared_labels' instead (docs/config.md)"
    ]
    assert "Warning" not in done.stderr  # no traceback-style source line
