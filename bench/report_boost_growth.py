"""SecureBoost's growth with rows: measured seconds by phase, the fitted model, exact bytes.

Reads ``bench_boost_scaling.py`` runs (one tree each, one label-holder worker) under ``--runs``
and ``bench_boost_bytes.py``'s JSON at ``--bytes``, and prints three Markdown tables for
docs/secureboost.md ("Growth with rows, bins and holders"):

1. measured seconds per phase of a tree at each row count;
2. per phase, the least-squares line ``seconds = a N + b`` through those points (decryption
   held constant: its work depends on bins and nodes, not rows; transport proportional to
   rows), and what it gives at
   ``--predict`` row counts (a model: those row counts were not run);
3. exact ``BoostGradients`` frame bytes per passive holder at each row count (the wire encoder's
   count, no encryption needed), the rest of the traffic as measured.

    .venv/bin/python bench/report_boost_growth.py \\
        --runs bench/results/secureboost/growth/rows_w1 \\
        --bytes bench/results/secureboost/growth/bytes_gradients.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

PHASE_NAMES = {
    "encrypt": "encrypt",
    "holders": "holders' histograms",
    "decrypt": "decrypt",
    "transport": "transport",
    "rest": "split finding and the rest",
}

ROW_INDEPENDENT = {"decrypt"}
THROUGH_ORIGIN = {"transport"}


def phase_seconds(tree: dict[str, Any]) -> dict[str, float]:
    seconds, transport = tree["seconds"], tree["transport_seconds"]
    holders = seconds.get("histogram", 0.0) + seconds.get("split_apply", 0.0) - transport
    rest = seconds.get("split_find", 0.0) + seconds.get("gradients", 0.0)
    return {
        "encrypt": seconds.get("encrypt", 0.0),
        "holders": holders,
        "decrypt": seconds.get("decrypt", 0.0),
        "transport": transport,
        "rest": rest,
    }


def load_runs(folder: Path) -> list[dict[str, Any]]:
    runs = [json.loads(p.read_text())["result"] for p in sorted(folder.glob("*.json"))]
    return sorted(runs, key=lambda r: r["rows"])


def measured_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| rows | " + " | ".join(f"{n} s" for n in PHASE_NAMES.values()) + " | total s | load |",
        "|---|" + "---|" * (len(PHASE_NAMES) + 2),
    ]
    for run in runs:
        split = phase_seconds(run["per_tree"][0])
        cells = " | ".join(f"{split[k]:.2f}" for k in PHASE_NAMES)
        load = run["load_average_before_after"][0][0]
        lines.append(f"| {run['rows']:,} | {cells} | {sum(split.values()):.1f} | {load:.1f} |")
    return lines


def fit(runs: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Per phase, ``(a, b)`` of the least-squares ``seconds = a N + b``.

    Decryption is held constant (``a = 0``, ``b`` the mean): the label holder decrypts the
    histograms' ciphertexts, whose number depends on bins and nodes, not on rows. Transport is
    proportional to rows (``b = 0``): it encodes, copies and decodes the frames, whose bytes grow
    with rows; at the sizes run its seconds are small and noisy, so an intercept fitted to them
    would say nothing.
    """
    rows = np.array([r["rows"] for r in runs], dtype=np.float64)
    lines = {}
    for key in PHASE_NAMES:
        seconds = np.array([phase_seconds(r["per_tree"][0])[key] for r in runs])
        if key in ROW_INDEPENDENT:
            lines[key] = (0.0, float(seconds.mean()))
            continue
        if key in THROUGH_ORIGIN:
            lines[key] = (float(rows @ seconds / (rows @ rows)), 0.0)
            continue
        slope, intercept = np.polyfit(rows, seconds, 1)
        lines[key] = (float(slope), float(intercept))
    return lines


def model_table(lines: dict[str, tuple[float, float]], predict: list[int]) -> list[str]:
    header = " | ".join(f"model at {n:,} rows s" for n in predict)
    out = [
        f"| phase | a (s per row) | b (s) | {header} |",
        "|---|---|---|" + "---|" * len(predict),
    ]
    totals = [0.0] * len(predict)
    for key, name in PHASE_NAMES.items():
        a, b = lines[key]
        values = [a * n + b for n in predict]
        totals = [t + v for t, v in zip(totals, values, strict=True)]
        cells = " | ".join(f"{v:,.1f}" for v in values)
        out.append(f"| {name} | {a:.3e} | {b:.2f} | {cells} |")
    out.append("| total | | | " + " | ".join(f"{t:,.0f}" for t in totals) + " |")
    return out


def bytes_table(runs: list[dict[str, Any]], frames: dict[str, Any]) -> list[str]:
    measured = {r["rows"]: r for r in runs}
    out = [
        "| rows | gradients frame per passive holder (exact) | over the frame limit |"
        " other bytes down (measured) | bytes up (measured) |",
        "|---|---|---|---|---|",
    ]
    for frame in frames["frames"]:
        run = measured.get(frame["rows"])
        if run is None:
            other, up = "not run", "not run"
        else:
            tree = run["per_tree"][0]
            other = f"{tree['bytes_down'] - tree['bytes_by_kind']['BoostGradients']:,}"
            up = f"{tree['bytes_up']:,}"
        limit = "yes" if frame["over_frame_limit"] else "no"
        out.append(f"| {frame['rows']:,} | {frame['bytes']:,} | {limit} | {other} | {up} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=Path, default=Path("bench/results/secureboost/growth/rows_w1")
    )
    parser.add_argument(
        "--bytes", type=Path, default=Path("bench/results/secureboost/growth/bytes_gradients.json")
    )
    parser.add_argument("--predict", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    args = parser.parse_args()
    runs = load_runs(args.runs)
    frames = json.loads(args.bytes.read_text())
    sections = [
        ("Measured seconds per tree by phase", measured_table(runs)),
        ("Model: seconds = a N + b per phase", model_table(fit(runs), args.predict)),
        ("Bytes per tree", bytes_table(runs, frames)),
    ]
    for title, lines in sections:
        print(f"### {title}\n")
        print("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
