"""Time the start of ``vfl score``: this checkout's lean client against a baseline checkout's.

``vfl score`` is started with a key file that does not exist, so it stops at the first file it
opens, after every import it makes: its time is the command's start-up. Each repeat runs this
checkout's code, then (with ``--baseline SRC``, the ``src`` folder of another checkout, through
``PYTHONPATH``) the baseline's, alternating, with the same interpreter and packages. It reports
the median wall time and CPU time (user + system) of each, and their ratio.

    .venv/bin/python bench/bench_score_startup.py [--repeats 7] [--baseline SRC] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = ["-m", "vfl.cli", "score", "127.0.0.1:9", "7"]


def certificates(folder: Path) -> list[str]:
    """``--ca``, ``--cert`` and a missing ``--key``, from ``vfl certs`` in ``folder``."""
    vfl = str(Path(sys.executable).with_name("vfl"))
    make = [vfl, "certs", "--out", str(folder), "--parties", "1", "--clients", "analyst"]
    subprocess.run(make, check=True, stdout=subprocess.DEVNULL)
    return [
        *("--ca", str(folder / "ca.pem"), "--cert", str(folder / "client-analyst.pem")),
        *("--key", str(folder / "missing.key")),
    ]


def one_start(arguments: list[str], source: str | None) -> dict[str, float]:
    """Wall and CPU seconds of one ``vfl score`` that stops at its missing key."""
    env = dict(os.environ, **({"PYTHONPATH": source} if source else {}))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *COMMAND, *arguments], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if "missing.key" not in done.stderr:
        raise SystemExit(f"vfl score did not stop at its key file: {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 4), "cpu_s": round(cpu, 4)}


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {name: round(statistics.median(r[name] for r in runs), 4) for name in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--baseline", help="src folder of another checkout, run alternately")
    parser.add_argument("--json", type=Path, help="also write every run here")
    args = parser.parse_args()
    runs: list[dict[str, float]] = []
    baseline: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="vfl-bench-score-") as folder:
        arguments = certificates(Path(folder))
        for _ in range(args.repeats):
            runs.append(one_start(arguments, None))
            if args.baseline:
                baseline.append(one_start(arguments, args.baseline))
    report: dict[str, object] = {"median": _median(runs), "runs": runs}
    print("this checkout, median:", json.dumps(report["median"]))
    if baseline:
        before = _median(baseline)
        ratio = {k: round(_median(runs)[k] / before[k], 3) for k in before}
        print("baseline, median:", json.dumps(before))
        print("ratio (this / baseline):", json.dumps(ratio))
        report |= {"baseline": args.baseline, "baseline_median": before, "ratio": ratio}
        report |= {"baseline_runs": baseline}
    if args.json is not None:
        machine = {"platform": platform.platform(), "cores": os.cpu_count()}
        args.json.write_text(json.dumps({"machine": machine, **report}, indent=2) + "\n")


if __name__ == "__main__":
    main()
