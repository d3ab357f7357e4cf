"""A small deployment written to disk: tables with partly overlapping IDs, certificates, configs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from vfl.data.vertical import VerticalData
from vfl.deploy.alignment import Alignment
from vfl.deploy.certs import PkiFiles, create_test_pki
from vfl.deploy.config import load_party_config, load_run_config
from vfl.deploy.data import encode_features, load_labels, load_party_tables
from vfl.results.files import RunDirectory
from vfl.results.metrics import Task
from vfl.run.compose import Blueprint, build_session
from vfl.run.fit import fit
from vfl.run.runner import target_of
from vfl.run.session import LocalParties, Session
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN

GROUPS = (("income", "debt"), ("region", "age"), ("tenure", "calls"))
"""Feature columns of parties 1, 2, 3."""

ROOT = Path(__file__).resolve().parents[2]

TRAINING_REQUESTS = (
    "EmbedRequest",
    "GradRequest",
    "CompressedGradRequest",
    "GradEmbedRequest",
    "CompressedGradEmbedRequest",
    "ViewBroadcast",
)


@dataclass
class Scenario:
    """Files of one deployment, and which IDs each holder has."""

    root: Path
    run_toml: Path
    party_tomls: dict[int, Path]
    pki: PkiFiles
    run_dir: Path
    ids: dict[int, dict[str, list[str]]] = field(default_factory=dict)  # holder -> split -> ids

    def state_dir(self, party: int) -> Path:
        return self.root / f"party{party}-state"

    def audit_log(self, party: int) -> Path:
        return self.root / f"party{party}-audit.jsonl"

    def common_ids(self, split: str) -> set[str]:
        return set.intersection(*(set(by_split[split]) for by_split in self.ids.values()))


def synthetic_table(num_rows: int, *, seed: int) -> pd.DataFrame:
    """A credit-like table: ids, six features spread over three parties, a binary label."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "id": [f"c{i:05d}" for i in range(num_rows)],
            "income": rng.normal(50, 10, num_rows),
            "debt": rng.normal(20, 5, num_rows),
            "region": rng.choice(["north", "south", "east"], num_rows),
            "age": rng.integers(18, 80, num_rows),
            "tenure": rng.integers(0, 30, num_rows),
            "calls": rng.poisson(3, num_rows),
        }
    )
    score = (frame["income"] - 50) / 10 - (frame["debt"] - 20) / 5 + (frame["region"] == "east")
    score += (frame["tenure"] - 15) / 10
    frame["default"] = np.where(score + rng.normal(0, 0.5, num_rows) > 0, "yes", "no")
    return frame


def make_scenario(
    root: Path,
    *,
    num_parties: int = 2,
    rows: tuple[int, int] = (240, 80),
    keep: float = 0.85,
    seed: int = 0,
    epochs: int = 2,
    mutual: bool = True,
    tokens: bool = True,
    server_names: Sequence[str] = ("localhost", "127.0.0.1"),
    deployment: Sequence[str] = (),
    train: Sequence[str] = (),
    bottom: Sequence[str] = (),
    extra: str = "",
) -> Scenario:
    """Write tables, certificates and configs; each holder keeps a random ``keep`` share of IDs."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    tables = {
        "train": synthetic_table(rows[0], seed=seed),
        "test": synthetic_table(rows[1], seed=seed + 1),
    }
    tables["test"]["id"] = [f"t{i:05d}" for i in range(rows[1])]
    pki = create_test_pki(
        root / "certs", parties=list(range(1, num_parties + 1)), server_names=server_names
    )
    holders = {
        0: ["id", "default"],
        **{p: ["id", *GROUPS[p - 1]] for p in range(1, num_parties + 1)},
    }
    ids: dict[int, dict[str, list[str]]] = {}
    for holder, columns in holders.items():
        ids[holder] = {}
        for split, table in tables.items():
            chosen = rng.permutation(len(table))[: int(keep * len(table))]
            part = table.iloc[chosen][columns]
            part.to_csv(root / f"holder{holder}-{split}.csv", index=False)
            ids[holder][split] = part["id"].tolist()
    party_tomls = {p: _write_party(root, p, pki, mutual, tokens) for p in range(1, num_parties + 1)}
    run_dir = root / "run"
    run_toml = _write_run(
        root, pki, party_tomls, mutual, tokens, epochs, deployment, train, bottom, extra
    )
    return Scenario(root, run_toml, party_tomls, pki, run_dir, ids)


def _write_party(root: Path, party: int, pki: PkiFiles, mutual: bool, tokens: bool) -> Path:
    files = pki.parties[party]
    lines = [
        f"party_id = {party}",
        'server = "localhost:1"',
        f'state_dir = "party{party}-state"',
        f'audit_log = "party{party}-audit.jsonl"',
        "give_up_s = 60",
        "keepalive_s = 5",
    ]
    if tokens:
        lines.append(f'token_file = "{files.token}"')
    lines += [
        "[data]",
        f'train = "holder{party}-train.csv"',
        f'test = "holder{party}-test.csv"',
        'id_column = "id"',
        "[tls]",
        f'ca = "{pki.ca_cert}"',
    ]
    if mutual:
        lines += [f'cert = "{files.cert}"', f'key = "{files.key}"']
    path = root / f"party{party}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_run(
    root: Path,
    pki: PkiFiles,
    party_tomls: dict[int, Path],
    mutual: bool,
    tokens: bool,
    epochs: int,
    deployment: Sequence[str],
    train: Sequence[str],
    bottom: Sequence[str] = (),
    extra: str = "",
) -> Path:
    lines = [
        "[data]",
        'name = "table"',
        'path = "holder0-train.csv"',
        'test_path = "holder0-test.csv"',
        'label = "default"',
        'id_column = "id"',
        "[model.bottom]",
        "hidden = [8]",
        "embedding_dim = 4",
        *bottom,
        "[train]",
        f"epochs = {epochs}",
        "batch_size = 32",
        *train,
        "[train.optimizer]",
        "lr = 0.02",
        "[output]",
        "progress = false",
        extra,
        "[deployment]",
        *_with_defaults(
            deployment,
            ['listen = "127.0.0.1:0"', "connect_timeout_s = 60", "request_timeout_s = 10"],
        ),
        "keepalive_s = 5",
        "[deployment.tls]",
        f'cert = "{pki.server_cert}"',
        f'key = "{pki.server_key}"',
        f'ca = "{pki.ca_cert}"',
        f"mutual = {'true' if mutual else 'false'}",
    ]
    for party, toml in party_tomls.items():
        lines += ["[[deployment.parties]]", f"id = {party}", f'config = "{toml.name}"']
        if tokens:
            lines.append(f'token_sha256 = "{pki.parties[party].token_sha256}"')
    path = root / "run.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _with_defaults(lines: Sequence[str], defaults: Sequence[str]) -> list[str]:
    """``lines`` plus each default whose key ``lines`` does not set."""
    keys = {line.split("=")[0].strip() for line in lines}
    return [*lines, *(d for d in defaults if d.split("=")[0].strip() not in keys)]


def deploy_command(*args: str, module: str = "vfl.cli") -> list[str]:
    """``vfl ARGS``: the main command line, run as ``python -m vfl.cli`` (or another module)."""
    return [sys.executable, "-m", module, *args]


def run_launch(
    scenario: Scenario,
    *extra: str,
    timeout: float = 120,
    env_extra: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``vfl launch`` on the scenario (with ``env_extra`` in its environment); output captured."""
    command = deploy_command(
        "launch", str(scenario.run_toml), "--run-dir", str(scenario.run_dir), *extra
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env_extra or {})}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=env, cwd=scenario.root
    )


def start(
    scenario: Scenario, name: str, *args: str, module: str = "vfl.cli"
) -> subprocess.Popen[bytes]:
    """Start ``vfl ARGS`` with its output appended to ``ROOT/<name>.log``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    log = (scenario.root / f"{name}.log").open("ab")
    return subprocess.Popen(
        deploy_command(*args, module=module),
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=scenario.root,
    )


def start_server(scenario: Scenario, listen: str, *extra: str) -> subprocess.Popen[bytes]:
    """The server of ``scenario`` listening on ``listen``."""
    return start(
        scenario,
        "server",
        "server",
        "--config",
        str(scenario.run_toml),
        "--run-dir",
        str(scenario.run_dir),
        f"--set=deployment.listen={listen}",
        *extra,
    )


def start_party(
    scenario: Scenario, party: int, address: str, *extra: str, module: str = "vfl.cli"
) -> subprocess.Popen[bytes]:
    """Party ``party`` of ``scenario`` dialing ``address`` (``module`` runs the command line)."""
    return start(
        scenario,
        f"party-{party}",
        "party",
        "--config",
        str(scenario.party_tomls[party]),
        "--server",
        address,
        *extra,
        module=module,
    )


def free_port() -> int:
    """A port that was free a moment ago (for tests that restart a server on the same port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` every 50 ms; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def wait_for_epoch(scenario: Scenario, server: subprocess.Popen[bytes], epochs: int) -> None:
    """Wait until the server recorded ``epochs`` epochs; fail with its log if it exits first."""

    def reached() -> bool:
        if server.poll() is not None:
            log = (scenario.root / "server.log").read_text()[-3000:]
            raise AssertionError(f"the server exited with {server.returncode}:\n{log}")
        return epochs_done(scenario) >= epochs

    wait_for(reached, 240, f"epoch {epochs}")


def epochs_done(scenario: Scenario) -> int:
    """Epochs recorded in the server's metrics so far."""
    path = scenario.run_dir / "metrics.jsonl"
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if '"train_loss": null' not in line)


def training_round_seen(scenario: Scenario, party: int) -> int:
    """The highest round of a training request in the party's audit log (-1 before any)."""
    path = scenario.audit_log(party)
    if not path.exists():
        return -1
    rounds = [
        int(record["round"])
        for record in map(json.loads, path.read_text().splitlines()[:-1])  # last may be partial
        if record.get("message") in TRAINING_REQUESTS
    ]
    return max(rounds, default=-1)


def party_alignment(scenario: Scenario, party: int) -> Alignment:
    return Alignment.load(next(scenario.state_dir(party).glob("alignment-*.pt")))


def server_alignment(scenario: Scenario) -> Alignment:
    return Alignment.load(scenario.run_dir / "alignment.pt")


def simulate_aligned(scenario: Scenario, run_dir: Path) -> Session[LocalParties]:
    """The same run in one process: the simulator's builders, in-process transport.

    Built with the deployment's settings (``deployed=True``: compressed evaluation traffic
    under ``compress.evaluation = "auto"``, PBM noise from the operating system).
    """
    config, _ = load_run_config(scenario.run_toml)
    labels = load_labels(config.data)
    aligned_labels = labels.aligned(server_alignment(scenario).rows)
    blocks = []
    for party, toml in sorted(scenario.party_tomls.items()):
        tables = load_party_tables(load_party_config(toml).data)
        rows = party_alignment(scenario, party).rows
        blocks.append(encode_features(tables[0].take(rows[0]), tables[1].take(rows[1])))
    data = VerticalData(
        tuple(train for train, _ in blocks),
        tuple(test for _, test in blocks),
        aligned_labels[SPLIT_TRAIN],
        aligned_labels[SPLIT_TEST],
        Task(len(labels.classes)),
    )
    simulation = build_session(Blueprint.from_config(config, deployed=True), data)
    fit(
        simulation,
        epochs=config.train.epochs,
        run=RunDirectory(run_dir),
        progress=False,
        eval_at_start=config.train.eval_at_start,
        eval_every=config.train.eval_every,
        target=target_of(config),
        stop_at_target=config.target.stop,
    )
    return simulation
