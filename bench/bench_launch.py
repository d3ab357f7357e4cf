"""Time the set-up phases of ``vfl launch examples/deploy/RUN.toml``: start to first epoch.

Each run works in a fresh copy of ``examples/deploy`` (its tables from ``make_data.py``, its
certificates from ``vfl certs``), so the example's own folder is never touched, and launches
``vfl launch RUN.toml --set train.epochs=1`` as a user would (the ``vfl`` script next to this
interpreter). The phases are read from the processes' logs (``RUN_DIR/logs/*.log``, whose lines
carry their time) and from the moment each line reaches this process's standard output:

- ``preloaded_s``: until the launcher has imported torch and vfl once for every process
  (``vfl.deploy.forked``; none in a launcher that does not fork);
- ``listening_s``: start until the server listens (every process starts at once);
- ``connected_s``: until the last party is connected;
- ``psi_train_s`` / ``psi_test_s``: the alignment of each split (the server's log);
- ``setup_s``: until the last party has set up its role: **set-up, start to first epoch**;
- ``first_epoch_s``: until the first epoch's line is printed (set-up plus one epoch);
- ``total_s``: until ``vfl launch`` exits.

``cpu_s`` is the CPU time (user + system) of every process the launch ran. With ``--baseline
SRC`` (the ``src`` folder of another checkout) each repeat launches this checkout's code and
then the baseline's (``PYTHONPATH=SRC``, the same interpreter and packages), alternating, and
the ratio of the medians is printed.

It prints the median of each over ``--repeats`` runs, and every run with ``--json``.

    .venv/bin/python bench/bench_launch.py [--repeats 5] [--baseline SRC] [--json out.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "deploy"
VFL = str(Path(sys.executable).with_name("vfl"))
PHASES = {
    "listening_s": ("server", "listening on", "first"),
    "connected_s": ("server", "connected (process", "last"),
    "psi_train_done": ("server", "train: ", "first"),
    "psi_test_done": ("server", "test: ", "first"),
    "setup_s": ("party", "set up (", "last"),
}


def prepare(folder: Path) -> None:
    """A copy of the example with its tables and certificates."""
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("data", "certs", "state"))
    subprocess.run([sys.executable, "make_data.py", "--out", "data"], cwd=folder, check=True)
    certs = [VFL, "certs", "--out", "certs", "--parties", "1", "2", "3"]
    subprocess.run(certs, cwd=folder, check=True, stdout=subprocess.DEVNULL)


def stamped(line: str) -> float | None:
    """The time a log line was written (its leading ``YYYY-MM-DD HH:MM:SS,mmm``), if it has one."""
    try:
        moment = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        return None
    return moment.timestamp()


def phase_times(logs: Path, start: float) -> dict[str, float]:
    """Seconds from ``start`` to each phase's log line."""
    found: dict[str, float] = {}
    for name, (who, text, which) in PHASES.items():
        moments = [
            moment
            for path in sorted(logs.glob(f"{who}*.log"))
            for line in path.read_text(errors="replace").splitlines()
            if text in line and (moment := stamped(line)) is not None
        ]
        if moments:
            found[name] = (max(moments) if which == "last" else min(moments)) - start
    return found


PRELOADED = "loaded torch and vfl once"
"""The launcher's line once it imported what its processes need (it forks them next)."""

EPOCH_LINE = re.compile(r"(^|\s)epoch 1 \|")
"""The first epoch's line (stdout before issue 27, stderr after, with the launch's clock)."""


def one_launch(folder: Path, run: str, source: str | None = None) -> dict[str, float]:
    """Launch the example once in ``folder`` (with the code in ``source``); phase seconds."""
    shutil.rmtree(folder / "state", ignore_errors=True)
    run_dir = folder / "runs" / f"bench-{run}"
    command = [VFL, "launch", "RUN.toml", "--run-dir", str(run_dir), "--set", "train.epochs=1"]
    env = dict(os.environ, **({"PYTHONPATH": source} if source else {}))
    cpu_before = children_cpu()
    start = time.time()
    process = subprocess.Popen(
        command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert process.stdout is not None
    first_epoch = None
    preloaded = None
    for line in process.stdout:
        if first_epoch is None and EPOCH_LINE.search(line):
            first_epoch = time.time() - start
        if preloaded is None and PRELOADED in line:
            preloaded = time.time() - start
    if process.wait() != 0:
        raise SystemExit(f"vfl launch failed; logs in {run_dir / 'logs'}")
    times = phase_times(run_dir / "logs", start)
    times["psi_train_s"] = times.pop("psi_train_done") - times["connected_s"]
    times["psi_test_s"] = times.pop("psi_test_done") - times["connected_s"] - times["psi_train_s"]
    times["first_epoch_s"] = first_epoch if first_epoch is not None else float("nan")
    if preloaded is not None:
        times["preloaded_s"] = preloaded
    times["total_s"] = time.time() - start
    times["cpu_s"] = children_cpu() - cpu_before
    return {name: round(value, 3) for name, value in times.items()}


def children_cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """The median of each figure over the runs that have it."""
    names = dict.fromkeys(name for run in runs for name in run)
    return {name: round(statistics.median(r[name] for r in runs if name in r), 3) for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write every run here")
    parser.add_argument("--baseline", help="src folder of another checkout, run alternately")
    args = parser.parse_args()
    runs: list[dict[str, float]] = []
    baseline: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="vfl-bench-launch-") as folder:
        example = Path(folder) / "deploy"
        prepare(example)
        for run in range(args.repeats):
            runs.append(one_launch(example, str(run)))
            print(json.dumps(runs[-1]))
            if args.baseline:
                baseline.append(one_launch(example, f"baseline-{run}", args.baseline))
                print("baseline:", json.dumps(baseline[-1]))
    median = medians(runs)
    print("median:", json.dumps(median))
    report: dict[str, object] = {"median": median, "runs": runs}
    if baseline:
        before = medians(baseline)
        ratio = {name: round(median[name] / before[name], 3) for name in median if before.get(name)}
        print("baseline median:", json.dumps(before))
        print("ratio (this / baseline):", json.dumps(ratio))
        report |= {"baseline": args.baseline, "baseline_median": before, "baseline_runs": baseline}
        report |= {"ratio": ratio}
    if args.json is not None:
        machine = {"platform": platform.platform(), "processor": platform.processor()}
        cores = os.cpu_count()
        args.json.write_text(json.dumps({"machine": machine, "cores": cores, **report}, indent=2))


if __name__ == "__main__":
    main()
