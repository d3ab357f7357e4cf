"""Reconstructed quadrants: party 1's top-left MNIST quadrant as the server rebuilds it.

Trains ``quadrants.toml`` (seed 0) once per setting below with the feature reconstruction
watching the server, asks the attack for its final reconstruction, and writes eight samples
(never among the auxiliary rows) of every setting, with the truth, to a small JSON file that
``report.py`` draws (``docs/attacks.md``)::

    PYTHONPATH=src .venv/bin/python experiments/attacks/quadrants.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import torch

from vfl.attacks import AttackProbe
from vfl.attacks.scoring import score
from vfl.config import load_config
from vfl.run import runner

HERE = Path(__file__).parent
SAMPLES = 8
# The sampler results/quadrants.json was drawn with (the default is now "chacha").
PBM = ("privacy.mechanism=pbm", "privacy.secure_aggregation=off", "privacy.sampler=torch")
SETTINGS: dict[str, tuple[str, ...]] = {
    "undefended": (),
    "PBM β=0.25 b=1024": (*PBM, "privacy.beta=0.25", "privacy.trials=1024"),
    "PBM β=0.25 b=64": (*PBM, "privacy.beta=0.25", "privacy.trials=64"),
    "PBM β=0.05 b=1024": (*PBM, "privacy.beta=0.05", "privacy.trials=1024"),
    "PBM β=0.05 b=4": (*PBM, "privacy.beta=0.05", "privacy.trials=4"),
    "PBM + secure sum β=0.25 b=1024": (
        "privacy.mechanism=pbm",
        "privacy.sampler=torch",
        "privacy.secure_aggregation=on",
        "privacy.beta=0.25",
        "privacy.trials=1024",
    ),
}
"""Each setting's overrides of ``quadrants.toml``, as in ``reconstruction.toml``."""


def _rounded(images: torch.Tensor) -> list[Any]:
    nested: list[Any] = torch.round(images * 1000).div(1000).tolist()
    return nested


def reconstruct(overrides: tuple[str, ...], folder: Path) -> dict[str, Any]:
    """Train one setting; its epsilon, scores, and the first ``SAMPLES`` reconstructed rows."""
    config = load_config(HERE / "quadrants.toml", ["train.seed=0", *overrides])
    probe = AttackProbe(config)
    summary = runner.train(config, folder, probe=probe)
    inference = probe.inference(config.train.epochs - 1)
    truth = probe.truth.features
    assert inference.features is not None and truth is not None
    ids = inference.ids[:SAMPLES]
    shown = inference.features[:SAMPLES].reshape(truth[ids].shape)
    return {
        "epsilon": summary.get("privacy", {}).get("epsilon"),
        "test_accuracy": summary["final"]["test_accuracy"],
        "metrics": score(inference, probe.truth),
        "ids": ids.tolist(),
        "truth": _rounded(truth[ids]),
        "images": _rounded(shown),
    }


def main() -> None:
    """Run every setting and write ``results/quadrants.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results/quadrants.json")
    out = parser.parse_args().out
    results: dict[str, Any] = {"samples": SAMPLES, "settings": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for index, (label, overrides) in enumerate(SETTINGS.items()):
            results["settings"][label] = reconstruct(overrides, Path(scratch) / str(index))
            print(f"{label}: {results['settings'][label]['metrics']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
