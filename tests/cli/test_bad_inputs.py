"""The command line on a table of bad inputs: every one ends in one clear line, never a traceback.

Each case runs ``vfl`` as a real process on a prepared workspace and must: exit with a non-zero
status within 30 s (every wait the case meets is bounded), print no traceback, and print a
``vfl: error:`` line that names the offending key, file, value or party (the case's expected
fragment). The classes: config files and values, settings that do not apply, data files, run
folders, resume, sweeps and Ray, deployment and deployed resume, certificates, prediction and
online scoring, attacks. Cases that could lose a file have their own tests that nothing is
lost (``test_check_before_move.py``, ``test_predict_inputs.py``, ``tests/deploy``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.deploy.scenario import Scenario, make_scenario
from tests.run.variants import write_run_config
from tests.silent_listener import silent_listener
from vfl.deploy.releases import FILE_NAME, id_keys, open_journal
from vfl.privacy.events import PbmEvent

TIMEOUT_S = 30


@dataclass(frozen=True)
class Workspace:
    """Files the cases are run against."""

    root: Path
    config: Path  # a valid run config over table.csv
    table: Path
    finished: Path  # a finished run (1 epoch) with bundles
    deployment: Scenario
    silent: str  # an address that accepts connections and never answers
    trained: list[Scenario] = field(default_factory=list)  # a deployment trained, once needed


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


def predict_on(name: str, text: str, *extra: str) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        data = with_file(name, text)(workspace)
        out = str(workspace.root / f"{name}.out.csv")
        return ["predict", str(workspace.finished), "--data", str(data), "--out", out, *extra]

    return args


def predict_over_its_input(workspace: Workspace) -> list[str]:
    data = with_file("own.csv", "id,income,debt,region,age\nc1,50,20,north,30\n")(workspace)
    return ["predict", str(workspace.finished), "--data", str(data), "--out", str(data), "--force"]


def weights_of_another_run(workspace: Workspace) -> list[str]:
    """The finished run with party 1's weights stamped as another run's (same architecture)."""
    target = copy_of_finished(workspace, "swapped")
    weights = target / "bundle" / "party-1" / "weights.safetensors"
    save_file(load_file(str(weights)), str(weights), metadata={"fingerprint": "0" * 64})
    return ["predict", str(target)]


def serve(*extra: str) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        toml = str(workspace.deployment.run_toml)
        return ["serve", "--config", toml, "--model", str(workspace.finished), *extra]

    return args


def score(address: Callable[[Workspace], str], *extra: str) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        pki = workspace.deployment.pki
        files = ["--ca", str(pki.ca_cert), "--cert", str(pki.parties[1].cert)]
        return ["score", address(workspace), "x", *files, "--key", str(pki.parties[1].key), *extra]

    return args


def ray_sweep(*extra: str) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        path = workspace.root / "ray.toml"
        path.write_text(f'base = "{workspace.config}"\nname = "r"\n')
        return ["sweep", str(path), "--executor", "ray", *extra]

    return args


def certs(*extra: str) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        out = str(workspace.deployment.pki.ca_cert.parent)
        return ["certs", "--out", out, "--parties", "1", "2", "--force", *extra]

    return args


def trained_deployment(workspace: Workspace) -> Scenario:
    """A deployment of its own trained for one epoch (the first case that needs it trains it)."""
    if not workspace.trained:
        deployment = make_scenario(
            workspace.root / "trained", num_parties=1, rows=(120, 40), epochs=1
        )
        launch = ["launch", str(deployment.run_toml), "--run-dir", str(deployment.run_dir)]
        result = _vfl(launch, cwd=deployment.root, timeout=240)
        assert result.returncode == 0, result.stderr
        workspace.trained.append(deployment)
    return workspace.trained[0]


def deployed_resume(*sets: str) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        trained = trained_deployment(workspace)
        flags = [a for s in sets for a in ("--set", s)]
        toml, run_dir = str(trained.run_toml), str(trained.run_dir)
        return ["server", "--config", toml, "--run-dir", run_dir, "--resume", *flags]

    return args


def party_resume(*sets: str) -> Callable[[Workspace], list[str]]:
    def args(workspace: Workspace) -> list[str]:
        trained = trained_deployment(workspace)
        flags = [a for s in sets for a in ("--set", s)]
        toml = str(trained.party_tomls[1])
        return ["party", "--config", toml, "--resume", "--server", "127.0.0.1:1", *flags]

    return args


def damaged_journal(workspace: Workspace) -> list[str]:
    """A release journal with one bit flipped in the middle of three releases."""
    folder = workspace.root / "journal"
    folder.mkdir(exist_ok=True)
    path = folder / FILE_NAME
    path.unlink(missing_ok=True)
    journal = open_journal(path, id_keys([b"a", b"b", b"c"]))[0]
    event = PbmEvent(trials=16, beta=0.05, parties=2, dimension=4)
    for rows in ([0], [1, 2], [0]):
        journal.append(np.array(rows, dtype=np.int64), event)
    journal.close()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    sets = [f"--set=privacy.journal_dir={folder}", f"--set=state_dir={workspace.root / 'st'}"]
    toml = str(workspace.deployment.party_tomls[1])
    return ["party", "--config", toml, "--server", "127.0.0.1:1", *sets]


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
    "PBM trials beyond what is accounted": Case(
        lambda w: run(w, "privacy.mechanism=pbm", "privacy.trials=100000000000"), "privacy.trials"
    ),
    "vfl privacy with a huge b": Case(
        lambda w: [
            *("privacy", "--b", "100000000000", "--beta", "0.05"),
            *("--parties", "4", "--dim", "16", "--epochs", "5"),
        ],
        "use b <= 4096",
    ),
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
    "predict a run folder that does not exist": Case(
        lambda w: ["predict", str(w.root / "no-such-run")], "no-such-run' does not exist"
    ),
    "predict a missing --data file over an existing --out": Case(
        lambda w: [
            "predict",
            str(w.finished),
            "--data",
            str(w.root / "nope.csv"),
            "--out",
            str(w.finished / "config.toml"),
        ],
        "nope.csv': no such file",
    ),
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
    "predict an unseen category with --strict": Case(
        predict_on("codes.csv", "id,income,debt,region,age\nc1,50,20,7,30\n", "--strict"),
        "--strict",
    ),
    "predict writing over its input": Case(predict_over_its_input, "is the input"),
    "predict with weights of another run": Case(weights_of_another_run, "comes from another run"),
    # online scoring
    "serve waiting NaN seconds": Case(serve("--wait-s", "nan"), "--wait-s"),
    "serve waiting forever": Case(serve("--wait-s", "inf"), "--wait-s"),
    "score with an infinite timeout": Case(
        score(lambda w: "127.0.0.1:1", "--timeout-s", "inf"), "--timeout-s"
    ),
    "score at a silent address": Case(
        score(lambda w: w.silent, "--timeout-s", "2"), "DEADLINE_EXCEEDED"
    ),
    # attacks bounded by the data
    "model completion with more labels than rows": Case(
        lambda w: run(w, "attack.name=model_completion", "attack.model_completion.labels=100000"),
        "attack.model_completion.labels",
    ),
    "label inference with more known positives than the data has": Case(
        lambda w: run(
            w, "attack.name=label_inference", "attack.label_inference.known_positives=100000"
        ),
        "attack.label_inference.known_positives",
    ),
    # settings that do not apply, and numbers out of range
    "lr_gamma under the constant schedule": Case(
        lambda w: run(w, "train.optimizer.lr_gamma=0.5"), "train.optimizer.lr_gamma"
    ),
    "checkpoint_every with checkpoints off": Case(
        lambda w: run(w, "train.checkpoint=false", "train.checkpoint_every=5"),
        "train.checkpoint_every",
    ),
    "compressor bits without a compressor": Case(
        lambda w: run(w, "compress.embedding.bits=4"), "compress.embedding.bits"
    ),
    "an attack setting without the attack": Case(
        lambda w: run(w, "attack.model_completion.epochs=5"), "attack.model_completion.epochs"
    ),
    "a hundred thousand threads": Case(lambda w: run(w, "train.threads=100000"), "train.threads"),
    # sweeps on Ray
    "a Ray address that is not Ray": Case(
        lambda w: ray_sweep("--address", w.silent, "--connect-timeout-s", "2")(w), "--address"
    ),
    "Ray CPUs per run not a number": Case(ray_sweep("--cpus-per-run", "nan"), "--cpus-per-run"),
    "a sweep with a NaN connect timeout": Case(
        ray_sweep("--address", "127.0.0.1:1", "--connect-timeout-s", "nan"), "--connect-timeout-s"
    ),
    # certificates: every argument checked before a file moves
    "certs with a space in a server name": Case(
        certs("--server-name", "a b"), "invalid server name 'a b'"
    ),
    "certs with a non-ASCII server name": Case(certs("--server-name", "bücher.example"), "IDNA"),
    "certs for ten million days": Case(certs("--days", "10000000"), "--days"),
    # deployment: resume, journal
    "deployed resume changing the learning rate": Case(
        deployed_resume("train.optimizer.lr=0.5"), "train.optimizer.lr (0.02 -> 0.5)"
    ),
    "party resume with other columns": Case(
        party_resume('data.columns=["income"]'), "data.columns"
    ),
    "party with a damaged release journal": Case(damaged_journal, "is damaged at byte"),
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("bad-inputs")
    config = write_run_config(root)
    finished = root / "finished"
    result = _vfl(["run", str(config), "--run-dir", str(finished), "--set", "train.epochs=2"])
    assert result.returncode == 0, result.stderr
    deployment = make_scenario(root / "deployment")
    with silent_listener() as silent:
        yield Workspace(root, config, root / "table.csv", finished, deployment, silent)


def _vfl(
    args: list[str], *, cwd: Path | None = None, timeout: float = TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vfl.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
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
