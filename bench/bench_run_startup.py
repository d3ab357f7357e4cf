"""Time a short ``vfl run`` end to end, against another checkout's code, alternating.

Runs ``vfl run CONFIG --set train.epochs=1 --quiet`` (by default the Adult example, whose one
epoch is short) as a user would, each run in a fresh output folder, and reports the median wall
time and CPU time (user + system of the process) over ``--repeats`` runs. With ``--baseline
SRC`` (the ``src`` folder of another checkout) each repeat runs this checkout and then the
baseline (``PYTHONPATH=SRC``, the same interpreter and packages), and the ratio of the medians is
printed.

    .venv/bin/python bench/bench_run_startup.py [--config C] [--repeats 5] [--baseline SRC]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_launch import children_cpu, medians

ROOT = Path(__file__).resolve().parent.parent
VFL = str(Path(sys.executable).with_name("vfl"))


def one_run(config: Path, out: Path, source: str | None) -> dict[str, float]:
    """One ``vfl run``: its wall and CPU seconds."""
    env = dict(os.environ, **({"PYTHONPATH": source} if source else {}))
    command = [VFL, "run", str(config), "--set", "train.epochs=1", "--set", f"output.dir={out}"]
    before = children_cpu()
    started = time.perf_counter()
    subprocess.run([*command, "--quiet"], check=True, env=env, stdout=subprocess.DEVNULL)
    return {"wall_s": time.perf_counter() - started, "cpu_s": children_cpu() - before}


def main() -> None:
    """Parse the arguments, run, print and optionally save the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "adult_3party.toml")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", help="the src folder of another checkout")
    parser.add_argument("--json", type=Path, help="write every run here")
    args = parser.parse_args()
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            ours.append(one_run(args.config, Path(scratch) / f"ours-{repeat}", None))
            print(json.dumps(ours[-1]))
            if args.baseline:
                theirs.append(one_run(args.config, Path(scratch) / f"base-{repeat}", args.baseline))
                print("baseline:", json.dumps(theirs[-1]))
    result: dict[str, object] = {
        "command": " ".join(sys.argv),
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "config": str(
            args.config.relative_to(ROOT) if args.config.is_relative_to(ROOT) else args.config
        ),
        "runs": ours,
        "median": (ours_median := medians(ours)),
    }
    print("median:", json.dumps(result["median"]))
    if theirs:
        result["baseline_runs"] = theirs
        result["baseline_median"] = base = medians(theirs)
        ratio = {key: round(ours_median[key] / base[key], 3) for key in base}
        result["ratio"] = ratio
        print("baseline median:", json.dumps(base))
        print("ratio (this / baseline):", json.dumps(ratio))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
