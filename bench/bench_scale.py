"""How epoch time and peak memory grow with parties, rows and embedding width (issue 14).

Synthetic tabular data (generated here, Gaussian columns with a linear label rule, 8 columns per
party), MLP bottoms (hidden 32), a concat head (hidden 32), Adam, in-process transport. Each point
is one epoch in a fresh child process, so its peak resident memory (``ru_maxrss``) is its own;
the child also reports the resident memory just before the data is built (``import_mib``: Python,
torch and vfl loaded) and the epoch's CPU seconds beside its wall time.

Three axes (the others held at the base point: 4 parties, 100,000 rows, embedding width 8):

- ``parties``: 2, 4, 8, 16, 32, 64 parties (8 columns each), 50,000 rows;
- ``rows``: 10k, 30k, 100k, 300k, 1M rows;
- ``width``: embedding width 4, 16, 64, 256.

Every repeat runs every point once, in order, so drift hits all points alike; the report takes
the median over repeats. "Linearity" is (time / time at the smallest point) divided by (size /
smallest size): 1.0 is exactly linear, below 1 is better than linear (fixed costs amortised).

    .venv/bin/python bench/bench_scale.py [--repeats 5] [--axes parties rows width] --out FILE
    .venv/bin/python bench/bench_scale.py --report FILE [--plot docs/img/scale.png]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COLUMNS_PER_PARTY = 8
BASE = {"parties": 4, "rows": 100_000, "width": 8}
AXES: dict[str, list[int]] = {
    "parties": [2, 4, 8, 16, 32, 64],
    "rows": [10_000, 30_000, 100_000, 300_000, 1_000_000],
    "width": [4, 16, 64, 256],
}
ROWS_FOR_PARTIES = 50_000
TEST_ROWS = 1_000
BATCH = 512


def _rss_mib() -> float:
    """Current resident memory of this process in MiB (Linux ``/proc``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_point(parties: int, rows: int, width: int) -> dict[str, float]:
    """One epoch at this size, in this process: wall and CPU seconds, memory in MiB."""
    import numpy as np
    import torch

    from vfl.config import load_config
    from vfl.data.dataset import Dataset, Split
    from vfl.data.partition import make_partition
    from vfl.data.vertical import vertical_data
    from vfl.run.compose import build_session

    torch.set_num_threads(1)
    import_mib = _rss_mib()
    features = parties * COLUMNS_PER_PARTY
    rng = np.random.default_rng(0)
    weights = rng.standard_normal(features).astype(np.float32)

    def split(count: int, first_id: int) -> Split:
        x = rng.standard_normal((count, features), dtype=np.float32)
        y = (x @ weights > 0).astype(np.int64)
        return Split(np.arange(first_id, first_id + count, dtype=np.int64), x, y)

    columns = tuple(f"c{k}" for k in range(features))
    dataset = Dataset(
        "synthetic", split(rows, 0), split(TEST_ROWS, rows), ("no", "yes"), columns=columns
    )
    partition = make_partition(dataset, "contiguous", parties)
    data = vertical_data(dataset, partition)
    config = load_config(
        None,
        [
            "data.name=adult",
            "partition.scheme=contiguous",
            f"partition.num_parties={parties}",
            "model.bottom.kind=mlp",
            "model.bottom.hidden=[32]",
            f"model.bottom.embedding_dim={width}",
            "model.head.fusion=concat",
            "model.head.hidden=[32]",
            f"train.batch_size={BATCH}",
            "train.optimizer.name=adam",
            "train.optimizer.lr=0.001",
        ],
    )
    session = build_session(config, data)
    trainer = session.trainer
    trainer.setup()
    data_mib = _rss_mib()
    wall, cpu = time.perf_counter(), time.process_time()
    trainer.train_epoch(0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    trainer.close()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "epoch_s": wall,
        "cpu_s": cpu,
        "rounds": -(-rows // BATCH),
        "import_mib": import_mib,
        "ready_mib": data_mib,
        "peak_mib": peak_mib,
    }


def point_sizes(axis: str, value: int) -> tuple[int, int, int]:
    """``(parties, rows, width)`` for one point of one axis."""
    sizes = dict(BASE)
    if axis == "parties":
        sizes["rows"] = ROWS_FOR_PARTIES
    sizes[axis] = value
    return sizes["parties"], sizes["rows"], sizes["width"]


def measure(axes: list[str], repeats: int) -> dict[str, Any]:
    """Every point of ``axes``, ``repeats`` times, each in a fresh child process."""
    runs: dict[str, dict[str, list[dict[str, float]]]] = {
        axis: {str(v): [] for v in AXES[axis]} for axis in axes
    }
    for repeat in range(repeats):
        for axis in axes:
            for value in AXES[axis]:
                parties, rows, width = point_sizes(axis, value)
                child = subprocess.run(
                    [sys.executable, __file__, "--point", str(parties), str(rows), str(width)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                result = json.loads(child.stdout.strip().splitlines()[-1])
                runs[axis][str(value)].append(result)
                print(f"repeat {repeat} {axis}={value}: {result}", file=sys.stderr)
    import torch

    return {
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'},"
        f" torch {torch.__version__}, 1 torch thread per process",
        "settings": f"synthetic table, {COLUMNS_PER_PARTY} columns per party, MLP bottoms [32],"
        f" concat head [32], Adam, batch {BATCH}, in-process transport",
        "base": BASE,
        "repeats": repeats,
        "runs": runs,
    }


def summarise(results: dict[str, Any]) -> dict[str, list[dict[str, float]]]:
    """Per axis, per point: medians over repeats and linearity against the smallest point."""
    table: dict[str, list[dict[str, float]]] = {}
    for axis, points in results["runs"].items():
        rows = []
        for value, repeats in points.items():
            rows.append(
                {
                    "size": float(value),
                    **{
                        key: statistics.median(r[key] for r in repeats)
                        for key in ("epoch_s", "cpu_s", "peak_mib", "import_mib")
                    },
                }
            )
        first = rows[0]
        for row in rows:
            growth = row["size"] / first["size"]
            row["time_linearity"] = row["epoch_s"] / first["epoch_s"] / growth
            above = row["peak_mib"] - row["import_mib"]
            first_above = first["peak_mib"] - first["import_mib"]
            row["memory_linearity"] = above / first_above / growth
        table[axis] = rows
    return table


def report(results: dict[str, Any]) -> str:
    """The Markdown tables of ``docs/benchmarks.md``'s scale section."""
    label = {"parties": "parties", "rows": "rows", "width": "embedding width"}
    lines = [f"Machine: {results['machine']}. {results['settings']}."]
    for axis, rows in summarise(results).items():
        lines += [
            "",
            f"| {label[axis]} | epoch (s) | CPU (s) | time / linear | peak RSS (MiB)"
            " | above imports (MiB) | memory / linear |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            lines.append(
                f"| {int(row['size']):,} | {row['epoch_s']:.2f} | {row['cpu_s']:.2f} |"
                f" {row['time_linearity']:.2f} | {row['peak_mib']:.0f} |"
                f" {row['peak_mib'] - row['import_mib']:.0f} | {row['memory_linearity']:.2f} |"
            )
    return "\n".join(lines)


def _short(size: float) -> str:
    """``30k``, ``1M``: a tick label that fits under a narrow panel."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if size >= scale:
            return f"{size / scale:g}{suffix}"
    return f"{size:g}"


def plot(results: dict[str, Any], path: Path) -> None:
    """Epoch time and memory above imports against size, log-log, one panel per axis."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    table = summarise(results)
    figure = Figure(figsize=(4 * len(table), 3.6))
    FigureCanvasAgg(figure)
    for column, (axis, rows) in enumerate(table.items(), start=1):
        ax = figure.add_subplot(1, len(table), column)
        sizes = [r["size"] for r in rows]
        times = [r["epoch_s"] for r in rows]
        memory = [r["peak_mib"] - r["import_mib"] for r in rows]
        linear = [times[0] * s / sizes[0] for s in sizes]
        ax.loglog(sizes, times, "o-", label="epoch time (s)")
        ax.loglog(sizes, linear, ":", color="grey", label="linear from the first point")
        ax.loglog(sizes, memory, "s--", label="peak memory above imports (MiB)")
        ax.set_xticks(sizes, [_short(s) for s in sizes])  # the measured sizes, plainly
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(axis)
        ax.set_title(f"growing {axis}")
        ax.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", nargs=3, type=int, metavar=("PARTIES", "ROWS", "WIDTH"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--axes", nargs="+", choices=sorted(AXES), default=list(AXES))
    parser.add_argument("--out", type=Path, help="write the raw results (JSON) here")
    parser.add_argument("--report", type=Path, help="print the tables of a results file")
    parser.add_argument("--plot", type=Path, help="with --report: also draw the figure here")
    args = parser.parse_args()
    if args.point:
        print(json.dumps(run_point(*args.point)))
        return
    if args.report:
        results = json.loads(args.report.read_text())
        print(report(results))
        if args.plot:
            plot(results, args.plot)
        return
    if args.out is None:
        parser.error("--out FILE is required to measure (or give --report FILE)")
    if args.out.exists():
        parser.error(f"--out {args.out} exists; choose a new file (results are never overwritten)")
    results = measure(args.axes, args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(report(results))


if __name__ == "__main__":
    main()
