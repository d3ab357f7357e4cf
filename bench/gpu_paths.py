"""The paths ``gpu_check.py`` runs on a device: every protocol and stage, and the life cycle.

Training paths train the Fashion-MNIST CNN example (four quadrant parties) on a seeded
subsample, in process, from one prepared data set. The life-cycle paths run as a user runs them
(``vfl run``, ``vfl attack``, ``vfl predict``, ``vfl launch``): a checkpoint resumed on the
device and on the CPU, a model trained on the device predicting on the CPU, every attack beside
a run on the device, and a deployment whose party 1 trains on its own device (PARTY.toml).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples/fashion_mnist.toml"

PATHS: dict[str, tuple[str, ...]] = {
    "centralized": ("protocol.mode=centralized",),
    "split-learning": (),
    "cvfl-shared-labels-lattice-q2": (
        "protocol.labels=shared",
        "protocol.local_steps=2",
        "compress.embedding.name=lattice",
        "compress.embedding.bits=3",
    ),
    "fedbcd-parallel-q3": ("protocol.local_steps=3",),
    "fedbcd-sequential": ("protocol.schedule=sequential",),
    "active-party": ("protocol.active_party=1", "protocol.local_steps=2"),
    "lvfl-pruning-sparsified": (
        "lightweight.alpha.kind=steps",
        "lightweight.alpha.steps=[[0, 0.0], [2, 0.5]]",
        "lightweight.beta.value=0.3",
    ),
    "pbm-secure-aggregation": (
        "privacy.mechanism=pbm",
        "privacy.trials=16",
        "privacy.secure_aggregation=on",
        "model.head.fusion=sum",
        "model.bottom.output_activation=tanh",
    ),
    "pbm-plain": (
        "privacy.mechanism=pbm",
        "privacy.trials=16",
        "privacy.secure_aggregation=off",
        "model.head.fusion=sum",
        "model.bottom.output_activation=tanh",
    ),
    "gaussian-gradient-noise": (
        "privacy.gradient_noise.noise_multiplier=0.5",
        "privacy.gradient_noise.clip=1.0",
    ),
    "scalar-both-ways": (
        "compress.embedding.name=scalar",
        "compress.embedding.bits=8",
        "compress.gradient.name=scalar",
        "compress.gradient.bits=8",
    ),
    "lattice-gradients": ("compress.gradient.name=lattice", "compress.gradient.bits=4"),
    "topk-gradient-selection": (
        "compress.embedding.name=topk",
        "compress.embedding.ratio=0.5",
        "compress.embedding.select=gradient",
    ),
    "compressed-evaluation": (
        "compress.embedding.name=scalar",
        "compress.embedding.bits=8",
        "compress.evaluation=on",
    ),
}
"""Every protocol, mechanism and compressor, each on top of ``examples/fashion_mnist.toml``."""

ATTACKS: dict[str, tuple[str, ...]] = {
    "attack-label-inference": ("attack.name=label_inference", "data.positive_classes=[0]"),
    "attack-model-completion": (
        "attack.name=model_completion",
        "attack.model_completion.labels=40",
        "attack.model_completion.epochs=50",
    ),
    "attack-feature-reconstruction": (
        "attack.name=feature_reconstruction",
        "attack.role=server",
        "attack.feature_reconstruction.epochs=3",
    ),
}


@dataclass(frozen=True)
class Size:
    """How big each check is.

    Attributes:
        train: Training rows of the subsample (0: all 60,000).
        test: Test rows.
        batch: Batch size of the path checks.
        epochs: Epochs of each path check.
    """

    train: int
    test: int
    batch: int
    epochs: int

    def overrides(self) -> tuple[str, ...]:
        """The ``--set`` values of this size."""
        return (
            f"data.max_train_samples={self.train}",
            f"data.max_test_samples={self.test}",
            f"train.batch_size={self.batch}",
            f"train.epochs={self.epochs}",
            "output.progress=false",
        )


Record = dict[str, Any]


def synchronize(device: str) -> None:
    """Wait for the device (timings end when its work is done)."""
    if device == "cuda":
        torch.cuda.synchronize()


def train_path(name: str, device: str, size: Size, data: Any) -> Record:
    """Train path ``name`` on ``device`` in process; its final test accuracy and wall time."""
    from vfl.config import load_config
    from vfl.run.compose import build_session
    from vfl.run.fit import fit

    config = load_config(EXAMPLE, [*size.overrides(), *PATHS[name], f"train.device={device}"])
    synchronize(device)
    started = time.perf_counter()
    session = build_session(config, data)
    records = fit(session, epochs=size.epochs, progress=False)
    synchronize(device)
    wall = time.perf_counter() - started
    session.trainer.close()
    return {"accuracy": records[-1]["test_accuracy"], "wall_s": wall}


def cli(*args: str) -> str:
    """Run ``vfl ARGS`` in this process (as the ``vfl`` script does); its standard output."""
    from vfl.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(list(args))
    if status != 0:
        raise RuntimeError(f"vfl {' '.join(args)} exited with {status}: {out.getvalue()[-500:]}")
    return out.getvalue()


def last_metrics(run_dir: Path) -> Record:
    """The last line of a run's ``metrics.jsonl``."""
    record: Record = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    return record


def sets(*overrides: str) -> list[str]:
    return [arg for item in overrides for arg in ("--set", item)]


def resume(device: str, size: Size, work: Path) -> Record:
    """One epoch on ``device``; resumed for a second there, and (a copy) on the CPU."""
    first, moved = work / "resume-device", work / "resume-cpu"
    once = sets(*size.overrides(), "train.epochs=1", f"train.device={device}")
    started = time.perf_counter()
    cli("run", str(EXAMPLE), "--run-dir", str(first), *once)
    shutil.copytree(first, moved)
    cli("run", "--resume", str(first), *sets("train.epochs=2"))
    cli("run", "--resume", str(moved), *sets("train.epochs=2", "train.device=cpu"))
    wall = time.perf_counter() - started
    here, there = last_metrics(first), last_metrics(moved)
    return {
        "accuracy": here["test_accuracy"],
        "wall_s": wall,
        "note": f"resumed on the CPU: {there['test_accuracy']:.4f}",
    }


def predict_on_cpu(device: str, size: Size, work: Path) -> Record:
    """Train on ``device`` (bundles exported), then ``vfl predict`` on the CPU."""
    run_dir = work / "predict"
    started = time.perf_counter()
    cli(
        "run",
        str(EXAMPLE),
        "--run-dir",
        str(run_dir),
        *sets(*size.overrides(), f"train.device={device}"),
    )
    printed = cli("predict", str(run_dir))
    wall = time.perf_counter() - started
    found = re.search(r"accuracy (\d\.\d+)", printed)
    return {
        "accuracy": float(found.group(1)) if found else float("nan"),
        "wall_s": wall,
        "note": f"trained: {last_metrics(run_dir)['test_accuracy']:.4f}",
    }


def attack(name: str, device: str, size: Size, work: Path) -> Record:
    """``vfl attack`` with the attack ``name`` beside a run on ``device``."""
    run_dir = work / name
    started = time.perf_counter()
    overrides = (*size.overrides(), *ATTACKS[name], f"train.device={device}")
    cli("attack", str(EXAMPLE), "--run-dir", str(run_dir), *sets(*overrides))
    wall = time.perf_counter() - started
    metrics = last_metrics(run_dir)
    shown = {k: round(v, 4) for k, v in metrics.items() if k.startswith("attack_")}
    return {"accuracy": metrics["test_accuracy"], "wall_s": wall, "note": json.dumps(shown)}


def deployment(device: str, work: Path) -> Record:
    """``vfl launch`` of the example deployment, its party 1 on ``device`` (PARTY.toml)."""
    folder = work / "deploy"
    shutil.copytree(
        ROOT / "examples/deploy", folder, ignore=shutil.ignore_patterns("data", "certs")
    )
    party = folder / "party1.toml"
    party.write_text(
        party.read_text().replace("party_id = 1\n", f'party_id = 1\ndevice = "{device}"\n')
    )
    python = [sys.executable, "-m", "vfl.cli"]
    subprocess.run(
        [sys.executable, str(folder / "make_data.py"), "--out", str(folder / "data")],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [*python, "certs", "--out", str(folder / "certs"), "--parties", "1", "2", "3"],
        check=True,
        capture_output=True,
    )
    run_dir = work / "deploy-run"
    started = time.perf_counter()
    launched = [*python, "launch", str(folder / "RUN.toml"), "--run-dir", str(run_dir)]
    done = subprocess.run(
        [*launched, *sets("train.epochs=1", "output.progress=false")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"vfl launch exited with {done.returncode}: {done.stderr[-800:]}")
    return {
        "accuracy": last_metrics(run_dir)["test_accuracy"],
        "wall_s": time.perf_counter() - started,
    }


LifeCycle = Callable[[str, Size, Path], Record]


def life_cycle() -> dict[str, LifeCycle]:
    """The life-cycle checks by name."""
    checks: dict[str, LifeCycle] = {
        "resume-on-device-and-cpu": resume,
        "predict-on-cpu": predict_on_cpu,
    }
    for name in ATTACKS:
        checks[name] = lambda device, size, work, name=name: attack(name, device, size, work)
    return checks
