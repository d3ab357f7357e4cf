"""Every path of vfl on a device, and VFL against centralized there: one command, one table.

On a machine with CUDA (about 4 minutes on one H100 or H200; ``make gpu-check``)::

    PYTHONPATH=src python3 bench/gpu_check.py --device cuda --out bench/results/gpu-check

Anywhere (the CPU; ``tests/device/test_gpu_check.py`` runs ``--size tiny``)::

    .venv/bin/python bench/gpu_check.py --device cpu --size tiny --out /tmp/gpu-check

Three parts, each a row per check in ``OUT/gpu_check.json`` (written after every row, so a run
cut short keeps what it finished) and in the table printed at the end (``OUT/table.md``):

- ``paths``: every protocol, mechanism and compressor trains the Fashion-MNIST CNN example on a
  subsample, on ``--device`` and (for an accelerator) on the CPU too: test accuracy on each,
  wall time, and wall / centralized's wall on the same device;
- ``life``: a checkpoint made on the device resumed there and on the CPU, a run trained on the
  device predicting on the CPU (``vfl predict``), every attack beside a run on the device, and
  (``deploy``) ``vfl launch`` of the example deployment with party 1 on the device;
- ``speed``: one epoch of VFL, its split floor and centralized, alternating, at batch 128 and
  1024 on the whole of Fashion-MNIST: medians of ``--repeats`` and the VFL/centralized ratio.

Exit status 1 if any check raised (its error is in the JSON and the table).
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from gpu_paths import EXAMPLE, PATHS, Size, deployment, life_cycle, train_path
from gpu_speed import alternate

SIZES = {
    "tiny": Size(train=64, test=64, batch=32, epochs=1),
    "full": Size(train=6000, test=2000, batch=128, epochs=1),
}
SPEED = {"tiny": ((32,), 128, 1), "full": ((128, 1024), 0, 5)}
"""Per size: the batch sizes timed, the training rows (0: all) and the timed repeats."""
PARTS = ("paths", "life", "deploy", "speed")
DEPLOYED = "deployed-party-on-device"
NEEDED = ("numpy", "pandas", "safetensors", "tomli_w", "cryptography", "tqdm")
DEPLOY_NEEDS = ("grpc", "google.protobuf", "nacl")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu", "mps"), default="cuda")
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON and table")
    parser.add_argument("--size", choices=tuple(SIZES), default="full")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma list of {PARTS}")
    parser.add_argument("--repeats", type=int, default=0, help="speed repeats (0: the size's)")
    parser.add_argument("--only", default="", help="comma list of check names (default: all)")
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    if unknown := sorted(set(parts) - set(PARTS)):
        parser.error(f"--parts: unknown {unknown}; valid: {', '.join(PARTS)}")
    known = {*PATHS, *life_cycle(), DEPLOYED}
    if unknown := sorted({n for n in args.only.split(",") if n} - known):
        parser.error(f"--only: unknown {unknown}; valid: {', '.join(sorted(known))}")
    missing = _missing(parts)
    if missing:
        parser.error(
            f"missing Python packages {missing}: on a machine without network, carry their"
            " wheels (`make gpu-pack` gathers them into .gpu/; `make gpu-check` installs them)"
        )
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here; use --device cpu")
    report = Report(args.out, _environment(args.device, args.size))
    with tempfile.TemporaryDirectory(prefix="vfl-gpu-check-") as work:
        _run(parts, args, report, Path(work))
    print(report.table())
    return 1 if report.failures else 0


def _run(parts: list[str], args: argparse.Namespace, report: Report, work: Path) -> None:
    from vfl.config import load_config
    from vfl.run.data import prepare

    size = SIZES[args.size]
    devices = [args.device] + (["cpu"] if args.device != "cpu" else [])
    if "paths" in parts:
        data = prepare(load_config(EXAMPLE, list(size.overrides())))[2]
        for device in devices:
            for name in _chosen(PATHS, args.only):
                report.add(
                    "paths", name, device, lambda n=name, d=device: train_path(n, d, size, data)
                )
    if "life" in parts:
        checks = life_cycle()
        for name in _chosen(checks, args.only):
            check = checks[name]
            report.add("life", name, args.device, lambda c=check: c(args.device, size, work))
    if "deploy" in parts:
        report.add("life", DEPLOYED, args.device, lambda: deployment(args.device, work))
    if "speed" in parts:
        batches, rows, repeats = SPEED[args.size]
        extra = (f"data.max_train_samples={rows}", "data.max_test_samples=64")
        data = prepare(load_config(EXAMPLE, list(extra)))[2]
        for batch in batches:
            report.add_speed(
                args.device,
                lambda b=batch: alternate(args.device, b, args.repeats or repeats, data, extra),
            )


class Report:
    """The rows so far, saved after each one."""

    def __init__(self, out: Path, environment: dict[str, Any]) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.result: dict[str, Any] = {**environment, "checks": [], "speed": []}
        self.failures = 0

    def add(self, part: str, name: str, device: str, check: Any) -> None:
        """Run ``check`` and record its row (its error, if it raised)."""
        row: dict[str, Any] = {"part": part, "name": name, "device": device}
        print(f"[{part}] {name} on {device} ...", flush=True)
        try:
            row.update(check())
        except Exception as error:  # a failing path is a result: record it, go on
            self.failures += 1
            row["error"] = f"{type(error).__name__}: {error}"[:600]
            row["traceback"] = traceback.format_exc()[-3000:]
        self.result["checks"].append(row)
        self._save()

    def add_speed(self, device: str, timing: Any) -> None:
        """Run one alternating timing and record it."""
        print(f"[speed] on {device} ...", flush=True)
        try:
            self.result["speed"].append({"device": device, **timing()})
        except Exception as error:
            self.failures += 1
            self.result["speed"].append(
                {"device": device, "error": f"{type(error).__name__}: {error}"}
            )
        self._save()

    def _save(self) -> None:
        (self.out / "gpu_check.json").write_text(json.dumps(self.result, indent=2) + "\n")
        (self.out / "table.md").write_text(self.table())

    def table(self) -> str:
        """The checks and timings as Markdown."""
        central = {
            r["device"]: r["wall_s"]
            for r in self.result["checks"]
            if r["name"] == "centralized" and "wall_s" in r
        }
        result = self.result
        lines = [
            f"{result['device_name']} | torch {result['torch']} | size {result['size']}",
            "",
            "| part | path | device | test accuracy | wall s | / centralized | note |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in self.result["checks"]:
            ratio = (
                r["wall_s"] / central[r["device"]]
                if "wall_s" in r and r["device"] in central
                else None
            )
            shown = ratio if r["part"] == "paths" else None
            lines.append(
                f"| {r['part']} | {r['name']} | {r['device']} | {_num(r.get('accuracy'))} |"
                f" {_num(r.get('wall_s'), 2)} | {_num(shown, 2)} |"
                f" {r.get('error') or r.get('note', '')} |"
            )
        if self.result["speed"]:
            lines += [
                "",
                "| device | batch | vfl s | split floor s | centralized s | vfl / centralized |",
            ]
            lines.append("|---|---|---|---|---|---|")
            for s in self.result["speed"]:
                if "error" in s:
                    lines.append(f"| {s['device']} | | | | | {s['error']} |")
                    continue
                m = s["median_epoch_s"]
                lines.append(
                    f"| {s['device']} | {s['batch_size']} | {m['vfl']} | {m['split_floor']} |"
                    f" {m['centralized']} | {s['ratio_vfl_over_centralized']} |"
                )
        return "\n".join(lines) + "\n"


def _chosen(names: Any, only: str) -> list[str]:
    """``names`` in order, or those of them ``--only`` lists."""
    wanted = {n for n in only.split(",") if n}
    return [n for n in names if not wanted or n in wanted]


def _num(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _missing(parts: list[str]) -> list[str]:
    names = [*NEEDED, *(DEPLOY_NEEDS if "deploy" in parts else ())]
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def _environment(device: str, size: str) -> dict[str, Any]:
    name = torch.cuda.get_device_name() if device == "cuda" else platform.processor() or "cpu"
    return {
        "device": device,
        "device_name": name,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "cpu_threads": torch.get_num_threads(),
        "size": size,
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


if __name__ == "__main__":
    raise SystemExit(main())
