"""Every shipped config parses and resolves against the schema, as the command that reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shipped.configs import ROOT, kind_of, resolve, shipped_configs
from vfl.config.io import read_toml
from vfl.errors import ConfigError


@pytest.mark.parametrize("path", shipped_configs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_config_resolves_as_the_command_that_reads_it(path: Path) -> None:
    # Execute / Assert: raises ConfigError naming the file and key if it does not
    resolve(path)


def test_every_kind_of_config_is_shipped_and_checked() -> None:
    # Execute
    kinds = {kind_of(read_toml(path)) for path in shipped_configs()}

    # Assert: the examples hold each kind (a resolver nobody calls would prove nothing)
    assert kinds == {"sweep", "deployment", "party", "run"}
    named = {str(path.relative_to(ROOT)) for path in shipped_configs()}
    assert {"experiments/examples/adult_lr_sweep.toml", "examples/deploy/RUN.toml"} <= named


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # The sweep file that broke README's example: a [set] table beside a `set = {...}` line
        (
            'base = "base.toml"\nname = "x"\nset = { "train.epochs" = 3 }\n'
            '[set]\n"protocol.pipeline" = false\n',
            "is not valid TOML",
        ),
        ('base = "base.toml"\nname = "x"\n[grid]\n"train.lr" = [1, 2]\n', "train.lr"),
        ('base = "missing.toml"\nname = "x"\n', "does not exist"),
        ("[train]\nepohcs = 3\n", "did you mean 'train.epochs'"),
        ('party_id = 1\nserver = "localhost:1"\nstate_dir = "s"\n', "training table"),
    ],
)
def test_a_broken_config_of_each_kind_is_refused(tmp_path: Path, text: str, message: str) -> None:
    # Prepare: the negative control: the check fails on files like the ones it passes
    (tmp_path / "base.toml").write_text("[train]\nepochs = 1\n")
    path = tmp_path / "broken.toml"
    path.write_text(text)

    # Execute / Assert
    with pytest.raises(ConfigError, match=message):
        resolve(path)
