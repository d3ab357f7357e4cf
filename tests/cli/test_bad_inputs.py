"""The command line on a table of bad inputs: every one ends in one clear line, never a traceback.

Each case runs ``vfl`` as a real process on a prepared workspace and must: exit with a non-zero
status within 30 s, print no traceback, and print a ``vfl: error:`` line that names the offending
key, file, value or party (the case's expected fragment).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from tests.deploy.scenario import Scenario, make_scenario
from tests.run.variants import write_run_config

TIMEOUT_S = 30


@dataclass(frozen=True)
class Workspace:
    """Files the cases are run against."""

    root: Path
    config: Path  # a valid run config over table.csv
    table: Path
    finished: Path  # a finished run (1 epoch) with bundles
    deployment: Scenario


@dataclass(frozen=True)
class Case:
    """One bad input: the arguments after ``vfl`` and what the error line must name."""

    args: Callable[[Workspace], list[str]]
    names: str


def run(workspace: Workspace, *overrides: str) -> list[str]:
    sets = [arg for item in overrides for arg in ("--set", item)]
    return ["run", str(workspace.config), "--run-dir", str(workspace.root / "fresh"), *sets]


def with_file(name: str, text: str) -> Callable[[Workspace], Path]:
    def write(workspace: Workspace) -> Path:
        path = workspace.root / name
        path.write_text(text)
        return path

    return write


def table_variant(
    name: str, edit: Callable[[pd.DataFrame], pd.DataFrame]
) -> Callable[[Workspace], list[str]]:
    """A run over a copy of the table with ``edit`` applied."""

    def args(workspace: Workspace) -> list[str]:
        path = workspace.root / name
        edit(pd.read_csv(workspace.table)).to_csv(path, index=False)
        return run(workspace, f'data.path="{path}"')

    return args


def raw_csv(name: str, text: str) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        path = workspace.root / name
        path.write_text(text)
        return run(workspace, f'data.path="{path}"')

    return args


def copy_of_finished(workspace: Workspace, name: str) -> Path:
    target = workspace.root / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(workspace.finished, target)
    return target


def resume_with(
    name: str, damage: Callable[[Path], object], *sets: str
) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        target = copy_of_finished(workspace, name)
        damage(target)
        return ["run", "--resume", str(target), *[a for s in sets for a in ("--set", s)]]

    return args


def sweep(name: str, text: str) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        path = workspace.root / f"{name}.toml"
        path.write_text(text.replace("BASE", str(workspace.config)))
        return ["sweep", str(path)]

    return args


def server(
    *sets: str, edit: Callable[[Scenario], None] | None = None
) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        if edit is not None:
            edit(workspace.deployment)
        flags = [a for s in sets for a in ("--set", s)]
        run_dir = workspace.root / "server-run"
        return [
            "server",
            "--config",
            str(workspace.deployment.run_toml),
            "--run-dir",
            str(run_dir),
            *flags,
        ]

    return args


def party(*sets: str, server_address: str = "") -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        flags = [a for s in sets for a in ("--set", s)]
        extra = ["--server", server_address] if server_address else []
        return ["party", "--config", str(workspace.deployment.party_tomls[1]), *extra, *flags]

    return args


def rename(name: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    return lambda frame: frame.rename(columns={name: "something_else"})


def word_in_income(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.astype({"income": object})
    frame.loc[17, "income"] = "twelve"
    return frame


def truncate(path: Path) -> Callable[[Path], object]:
    def damage(run_dir: Path) -> None:
        file = run_dir / path
        file.write_bytes(file.read_bytes()[: len(file.read_bytes()) // 2])

    return damage


def edit_config(old: str, new: str) -> Callable[[Path], None]:
    def damage(run_dir: Path) -> None:
        config = run_dir / "config.toml"
        config.write_text(config.read_text().replace(old, new, 1))

    return damage


def no_damage(run_dir: Path) -> None:
    """Leave the run as it is."""


def three_classes_with_auc(workspace: Workspace) -> list[str]:
    three = table_variant("three.csv", lambda f: f.assign(default=np.arange(len(f)) % 3))
    return [*three(workspace), "--set", "target.metric=test_auc"]


def into_users_folder(workspace: Workspace) -> list[str]:
    folder = workspace.root / "mine"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text("# the user's own config\n")
    return ["run", str(workspace.config), "--run-dir", str(folder)]


CASES: dict[str, Case] = {
    # config files and values
    "config file missing": Case(lambda w: ["run", str(w.root / "nope.toml")], "nope.toml"),
    "config not TOML": Case(
        lambda w: ["run", str(with_file("bad.toml", "[data\nname=")(w))], "bad.toml"
    ),
    "unknown key": Case(lambda w: run(w, "train.epoch=3"), "train.epoch"),
    "wrong type": Case(lambda w: run(w, 'train.epochs="three"'), "train.epochs must be an integer"),
    "infinite learning rate": Case(
        lambda w: run(w, "train.optimizer.lr=inf"), "train.optimizer.lr"
    ),
    "NaN learning rate": Case(lambda w: run(w, "train.optimizer.lr=nan"), "train.optimizer.lr"),
    "zero epochs": Case(lambda w: run(w, "train.epochs=0"), "train.epochs"),
    "zero batch size": Case(lambda w: run(w, "train.batch_size=0"), "train.batch_size"),
    "unknown labels mode": Case(lambda w: run(w, "protocol.labels=weird"), "protocol.labels"),
    "unknown compressor": Case(lambda w: run(w, "compress.embedding.name=zip"), "zip"),
    "lattice bits too many": Case(
        lambda w: run(w, "compress.embedding.name=lattice", "compress.embedding.bits=12"),
        "compress.embedding.bits",
    ),
    "steps schedule without steps": Case(
        lambda w: run(
            w,
            "compress.embedding.name=scalar",
            "compress.embedding.bits=4",
            "compress.embedding.schedule=steps",
        ),
        "compress.embedding.steps",
    ),
    "PBM with a concatenating head": Case(
        lambda w: run(w, "privacy.mechanism=pbm", "model.bottom.output_activation=tanh"),
        "model.head.fusion",
    ),
    "secure aggregation without PBM": Case(
        lambda w: run(w, "privacy.secure_aggregation=on", "model.head.fusion=sum"),
        "privacy.secure_aggregation",
    ),
    "active party out of range": Case(
        lambda w: run(w, "protocol.active_party=9"), "protocol.active_party"
    ),
    "stop without a target": Case(lambda w: run(w, "target.stop=true"), "target.stop"),
    "target value not finite": Case(
        lambda w: run(w, "target.metric=test_accuracy", "target.value=inf"), "target.value"
    ),
    "AUC on a three-class task": Case(three_classes_with_auc, "test_auc"),
    "momentum with Adam": Case(
        lambda w: run(w, "train.optimizer.momentum=0.5"), "train.optimizer.momentum"
    ),
    "malformed --set": Case(lambda w: run(w, "train.epochs"), "train.epochs"),
    "sequential schedule with shared labels": Case(
        lambda w: run(w, "protocol.labels=shared", "protocol.schedule=sequential"),
        "protocol.schedule",
    ),
    "positive classes the data lacks": Case(
        lambda w: run(w, "data.positive_classes=[5]"), "positive_classes"
    ),
    "column group naming an unknown column": Case(
        lambda w: run(w, 'partition.groups=[["income"], ["debt"], ["nosuch"]]'), "nosuch"
    ),
    "image partition of a table": Case(
        lambda w: run(
            w, "partition.scheme=halves", "partition.num_parties=2", "partition.groups=[]"
        ),
        "'halves' does not apply to tables",
    ),
    "grid that does not cover the parties": Case(
        lambda w: run(w, "partition.scheme=grid", "partition.grid=[2, 2]", "partition.groups=[]"),
        "partition.grid",
    ),
    "plain sum head with concatenation": Case(
        lambda w: run(w, "model.head.top=none"), "model.head.fusion"
    ),
    "unknown data set": Case(lambda w: run(w, "data.name=nosuch"), "nosuch"),
    "a key the data set does not read": Case(
        lambda w: run(
            w,
            "data.name=adult",
            "data.label=income",
            "partition.scheme=contiguous",
            "partition.groups=[]",
        ),
        "data.label",
    ),
    # data files
    "table file missing": Case(lambda w: run(w, f'data.path="{w.root / "gone.csv"}"'), "gone.csv"),
    "a short CSV row": Case(
        raw_csv(
            "short.csv", "id,income,debt,region,age,default\nc1,50,20,north,30,no\nc2,40,north\n"
        ),
        "short.csv",
    ),
    "a repeated header": Case(
        raw_csv("twice.csv", "id,age,debt,region,age,default\nc1,50,20,north,30,no\n"),
        "names column 'age' twice",
    ),
    "a word in a numeric column": Case(table_variant("word.csv", word_in_income), "twelve"),
    "a table too small to split": Case(
        table_variant("tiny.csv", lambda f: f.head(3)), "test split has no rows"
    ),
    "label column missing": Case(
        table_variant("nolabel.csv", rename("default")), "no label column 'default'"
    ),
    "id column missing": Case(table_variant("noid.csv", rename("id")), "no id column 'id'"),
    # the file system and run folders
    "run directory is a file": Case(
        lambda w: ["run", str(w.config), "--run-dir", str(with_file("afile", "x")(w))], "afile"
    ),
    "run directory holds the user's config": Case(into_users_folder, "config.toml"),
    "run directory under a file": Case(
        lambda w: ["run", str(w.config), "--run-dir", str(with_file("plain", "x")(w) / "run")],
        "plain",
    ),
    "a finished run's name again": Case(
        lambda w: ["run", str(w.config), "--run-dir", str(w.finished)], "already holds a run"
    ),
    # checkpoints and resume
    "resume a folder that is not a run": Case(
        lambda w: ["run", "--resume", str(w.root)], "holds no config.toml"
    ),
    "resume a truncated checkpoint": Case(
        resume_with("cut", truncate(Path("checkpoint.pt"))), "checkpoint.pt"
    ),
    "resume a checkpoint that is text": Case(
        resume_with("text", lambda d: (d / "checkpoint.pt").write_text("garbage")), "checkpoint.pt"
    ),
    "resume changing the learning rate": Case(
        resume_with("lr", no_damage, "train.optimizer.lr=0.5"), "train.optimizer.lr"
    ),
    "resume after editing config.toml": Case(
        resume_with("edited", edit_config("batch_size = 32", "batch_size = 64")), "batch_size"
    ),
    "resume to fewer epochs": Case(
        resume_with("fewer", no_damage, "train.epochs=1"), "train.epochs"
    ),
    "a torn metrics line before the last": Case(
        resume_with(
            "torn",
            lambda d: (d / "metrics.jsonl").write_text(
                '{"epoch": 0, "rou\n' + (d / "metrics.jsonl").read_text()
            ),
        ),
        "metrics.jsonl",
    ),
    # sweeps and plots
    "sweep file missing": Case(lambda w: ["sweep", str(w.root / "none.toml")], "none.toml"),
    "sweep grid key unknown": Case(
        sweep("gridkey", 'base = "BASE"\nname = "s"\n[grid]\n"train.nosuch" = [1, 2]\n'),
        "train.nosuch",
    ),
    "sweep grid without values": Case(
        sweep("empty", 'base = "BASE"\nname = "s"\n[grid]\n"train.epochs" = []\n'), "train.epochs"
    ),
    "plot of a folder that is no run": Case(
        lambda w: ["plot", str(w.root)], "neither a sweep folder"
    ),
    "plot of a metric never recorded": Case(
        lambda w: ["plot", str(w.finished), "--metric", "test_nothing"], "test_nothing"
    ),
    # deployment
    "server with a missing certificate": Case(
        server(edit=lambda s: s.pki.server_cert.unlink(missing_ok=True)), "tls.cert"
    ),
    "server listening on a port out of range": Case(
        server('deployment.listen="127.0.0.1:99999"'), "99999"
    ),
    "server refusing seeded PBM noise": Case(
        server(
            "privacy.mechanism=pbm",
            "privacy.randomness=seeded",
            "model.head.fusion=sum",
            "model.bottom.output_activation=tanh",
        ),
        "privacy.randomness",
    ),
    "party dialing a server without a port": Case(party(server_address="localhost"), "localhost"),
    "party with a missing token file": Case(party('token_file="nope.token"'), "nope.token"),
    "certs into a folder holding a CA": Case(
        lambda w: ["certs", "--out", str(w.deployment.pki.ca_cert.parent), "--parties", "1"],
        "ca.pem",
    ),
    # prediction and data commands
    "predict with a run that has no bundle": Case(lambda w: ["predict", str(w.root)], "bundle"),
    "predict on a table missing a column": Case(
        lambda w: [
            "predict",
            str(w.finished),
            "--data",
            str(with_file("new.csv", "id,income,region,age\nc1,50,north,30\n")(w)),
            "--out",
            str(w.root / "p.csv"),
        ],
        "debt",
    ),
    "fetch an unknown data set": Case(lambda w: ["data", "fetch", "nosuch"], "nosuch"),
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("bad-inputs")
    config = write_run_config(root)
    finished = root / "finished"
    result = _vfl(["run", str(config), "--run-dir", str(finished), "--set", "train.epochs=2"])
    assert result.returncode == 0, result.stderr
    deployment = make_scenario(root / "deployment")
    return Workspace(root, config, root / "table.csv", finished, deployment)


def _vfl(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vfl.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_the_table_holds_at_least_fifty_bad_inputs() -> None:
    assert len(CASES) >= 50


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_input_ends_in_one_clear_line(workspace: Workspace, name: str) -> None:
    # Prepare
    case = CASES[name]
    args = case.args(workspace)

    # Execute
    result = _vfl(args)

    # Assert: an error status, no traceback, and a line naming what is wrong
    assert result.returncode != 0, f"{name}: exit 0\n{result.stdout}"
    assert "Traceback (most recent call last)" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("vfl: error:")]
    assert errors, f"{name}: no 'vfl: error:' line in\n{result.stderr}"
    assert any(case.names in line for line in errors), (
        f"{name}: {errors} names nothing of {case.names!r}"
    )


def test_the_check_fails_on_a_run_that_succeeds(workspace: Workspace) -> None:
    # Negative control: a valid run exits 0 with no error line
    control = workspace.root / "control"
    result = _vfl(
        ["run", str(workspace.config), "--run-dir", str(control), "--set", "train.epochs=1"]
    )
    assert result.returncode == 0
    assert not [line for line in result.stderr.splitlines() if line.startswith("vfl: error:")]
    assert torch.load(control / "checkpoint.pt", weights_only=True)["epoch"] == 1
