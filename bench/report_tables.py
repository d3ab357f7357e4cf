"""Print the runtime tables of docs/benchmarks.md that come from one benchmark's raw JSON.

.venv/bin/python bench/report_tables.py grpc bench/results/grpc_idle
.venv/bin/python bench/report_tables.py grpc-sides bench/results/grpc_asyncio
.venv/bin/python bench/report_tables.py optimizer bench/results/optimizer_step.json
.venv/bin/python bench/report_tables.py sampler bench/results/sampler_by_trials.json
.venv/bin/python bench/report_tables.py cold bench/results/codec_cold
.venv/bin/python bench/report_tables.py pbm-parts bench/results/pbm_parts/run_1.json
.venv/bin/python bench/report_tables.py pbm-party bench/results/pbm_party/run_1.json
.venv/bin/python bench/report_tables.py launch bench/results/setup/launch_gc_freeze.json
.venv/bin/python bench/report_tables.py run-startup bench/results/setup/run_gc_freeze.json
.venv/bin/python bench/report_tables.py bitpack bench/results/wire/bitpack_load.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def grpc(folder: Path) -> list[str]:
    """One row per ``run_<i>.json`` of ``bench_grpc.py --json``."""
    lines = [
        "| run | in-process s/epoch | gRPC s/epoch | time ratio | CPU s/epoch in-process"
        " | gRPC (all 5 processes) | CPU ratio | wire / ledger bytes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(folder.glob("run_*.json"), key=lambda p: int(p.stem.split("_")[1])):
        r: dict[str, Any] = json.loads(path.read_text())
        wall, cpu = r["seconds_per_epoch"], r["cpu_seconds_per_epoch"]
        lines.append(
            f"| {path.stem.split('_')[1]} | {wall['inproc']:.3f} | {wall['grpc']:.3f}"
            f" | **{r['time_ratio']:.2f}** | {cpu['inproc']:.2f} | {cpu['grpc']:.2f}"
            f" | {r['cpu_ratio']:.2f} | +{100 * r['wire_over_ledger']:.2f} % |"
        )
    return lines


def grpc_sides(folder: Path) -> list[str]:
    """Two versions of the code, ``<side>_<i>.json`` runs alternating: each run, then medians."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("*_*.json"), key=lambda p: int(p.stem.rsplit("_", 1)[1])):
        runs.setdefault(path.stem.rsplit("_", 1)[0], []).append(json.loads(path.read_text()))
    lines = [
        "| code | runs | time ratio (each run) | median time ratio | median gRPC s/epoch"
        " | median CPU s/epoch in-process | median gRPC CPU s/epoch (all 5 processes) |",
        "|---|---|---|---|---|---|---|",
    ]
    for side, results in runs.items():
        ratios = [r["time_ratio"] for r in results]
        wall = statistics.median(r["seconds_per_epoch"]["grpc"] for r in results)
        cpu_in = statistics.median(r["cpu_seconds_per_epoch"]["inproc"] for r in results)
        cpu = statistics.median(r["cpu_seconds_per_epoch"]["grpc"] for r in results)
        lines.append(
            f"| {side} | {len(results)} | {', '.join(f'{x:.2f}' for x in ratios)}"
            f" | **{statistics.median(ratios):.2f}** | {wall:.3f} | {cpu_in:.2f} | {cpu:.2f} |"
        )
    return lines


def optimizer(path: Path) -> list[str]:
    """The three ways of stepping the parties, from ``bench_optimizer_step.py``."""
    r: dict[str, Any] = json.loads(path.read_text())
    names = {
        "one_per_party": "one optimizer per party (today)",
        "one_call_groups": "one optimizer, one parameter group per party",
        "one_call": "one optimizer, one group for all parameters",
    }
    lines = ["| way | µs per round (median) | CPU µs per round |", "|---|---|---|"]
    for key, name in names.items():
        wall, cpu = r["median_us_per_round"][key], r["median_cpu_us_per_round"][key]
        lines.append(f"| {name} | {wall:.1f} | {cpu:.1f} |")
    return lines


def sampler(path: Path) -> list[str]:
    """Milliseconds per draw by trials, from ``bench_sampler.py``."""
    r: dict[str, Any] = json.loads(path.read_text())
    lines = [
        "| b | chacha (ms per draw) | torch.binomial (ms) | chacha / torch |",
        "|---|---|---|---|",
    ]
    for key, row in r.items():
        if key.startswith("b="):
            times = row["ms_per_draw"]
            lines.append(
                f"| {key[2:]} | {times['chacha']:.3f} | {times['torch']:.3f}"
                f" | {row['chacha_over_torch']:.2f} |"
            )
    return lines


def cold(folder: Path) -> list[str]:
    """Hot and cold cost of each piece, from ``cold_<side>_<i>.json`` of ``bench_cold_path.py``.

    Each cell is the median over the runs of a side of the runs' medians.
    """
    sides: dict[str, list[dict[str, dict[str, float]]]] = {}
    for path in sorted(folder.glob("cold_*_*.json")):
        side = path.stem.split("_")[1]
        sides.setdefault(side, []).append(json.loads(path.read_text())["median_us"])
    lines = [
        "| piece | code | runs | hot (µs) | after 2 ms of other Python (µs) | after a training"
        " step (µs) | after a step / hot |",
        "|---|---|---|---|---|---|---|",
    ]
    pieces = next(iter(sides.values()))[0]
    for piece in pieces:
        for side, runs in sorted(sides.items(), key=lambda item: item[0] != "before"):
            cells = {
                setting: statistics.median(run[piece][setting] for run in runs)
                for setting in ("hot", "after_spin", "after_step")
            }
            lines.append(
                f"| {piece} | {side} | {len(runs)} | {cells['hot']:.1f} | {cells['after_spin']:.1f}"
                f" | {cells['after_step']:.1f} | {cells['after_step'] / cells['hot']:.1f} |"
            )
    return lines


def pbm_parts(path: Path) -> list[str]:
    """Where the privacy pipeline's time goes, from one ``bench_pbm.py`` run (medians)."""
    r: dict[str, Any] = json.loads(path.read_text())
    names = ("sampling", "privatize_other", "masking", "packing", "server")
    lines = [
        "| parties | round (ms) | pipeline (ms) | share | " + " | ".join(names) + " (ms) |",
        "|---|---|---|---|" + "---|" * len(names),
    ]
    for key, row in r.items():
        if key.startswith("M="):
            parts = " | ".join(f"{row['parts_ms'][name]:.2f}" for name in names)
            lines.append(
                f"| {key} | {row['round_ms']:.2f} | {row['pbm_and_masking_ms']:.2f}"
                f" | {100 * row['fraction']:.1f}% | {parts} |"
            )
    return lines


def pbm_party(path: Path) -> list[str]:
    """One party's pipeline piece by piece, hot, from ``bench_pbm_party.py`` (µs per call)."""
    r: dict[str, Any] = json.loads(path.read_text())
    names = ("keystream", "draw", "privatize", "mask", "pack")
    lines = [
        "| parties | " + " | ".join(names) + " | privatize + mask + pack | CPU of those |",
        "|---|" + "---|" * (len(names) + 2),
    ]
    for key, row in r.items():
        if key.startswith("M="):
            us, cpu = row["us"], row["cpu_us"]
            party = sum(us[name] for name in ("privatize", "mask", "pack"))
            party_cpu = sum(cpu[name] for name in ("privatize", "mask", "pack"))
            cells = " | ".join(f"{us[name]:.0f}" for name in names)
            lines.append(f"| {key} | {cells} | **{party:.0f}** | {party_cpu:.0f} |")
    return lines


LAUNCH_ROWS = {
    "preloaded_s": "the launcher has imported torch and vfl once",
    "listening_s": "the server listens",
    "connected_s": "every party connected",
    "psi_train_s": "PSI, training split (7,600 IDs)",
    "psi_test_s": "PSI, test split (1,900 IDs)",
    "setup_s": "**set-up: start to every party set up**",
    "first_epoch_s": "first epoch's line printed",
    "total_s": "launch ends (1 epoch)",
    "cpu_s": "CPU of every process, s",
}


def launch(path: Path) -> list[str]:
    """``bench_launch.py --baseline ... --json``: medians before and after, their ratio."""
    r: dict[str, Any] = json.loads(path.read_text())
    lines = [
        "| seconds from `vfl launch`'s start, median of"
        f" {len(r['runs'])} | before | after | after / before |",
        "|---|---|---|---|",
    ]
    for key, label in LAUNCH_ROWS.items():
        before, after = r["baseline_median"][key], r["median"][key]
        lines.append(f"| {label} | {before:.2f} | {after:.2f} | {after / before:.2f} |")
    for key in ("setup_s", "first_epoch_s"):
        runs = ", ".join(f"{run[key]:.2f}" for run in r["runs"])
        before = ", ".join(f"{run[key]:.2f}" for run in r["baseline_runs"])
        lines.append(f"\n{LAUNCH_ROWS[key].strip('*')}, each run: {runs} (before: {before})")
    return lines


def run_startup(path: Path) -> list[str]:
    """``bench_run_startup.py --baseline ... --json``: medians before and after, their ratio."""
    r: dict[str, Any] = json.loads(path.read_text())
    lines = [
        f"| `vfl run`, median of {len(r['runs'])} | before | after | after / before |",
        "|---|---|---|---|",
    ]
    for key, label in (("wall_s", "wall, s"), ("cpu_s", "CPU, s")):
        before, after = r["baseline_median"][key], r["median"][key]
        lines.append(f"| {label} | {before:.2f} | {after:.2f} | {after / before:.2f} |")
    return lines


def bitpack(path: Path) -> list[str]:
    """``bench_bitpack.py --json``: per message by each way (7 bits), then the loops' load."""
    r: dict[str, Any] = json.loads(path.read_text())
    lines = [
        "| codes per message (7 bits; 13 alike) | numpy pack / unpack, µs"
        " | loops pack / unpack, µs |",
        "|---|---|---|",
    ]
    for row in r["messages"]:
        if row["bits"] == 7:
            lines.append(
                f"| {int(row['codes']):,} | {row['pack_numpy_us']:.1f} /"
                f" {row['unpack_numpy_us']:.1f} | {row['pack_loops_us']:.1f} /"
                f" {row['unpack_loops_us']:.1f} |"
            )
    load = r["load"]
    lines.append(
        f"| a process's first message, loading the loops | |"
        f" {load['load_wall_s']:.2f} s wall, {load['load_cpu_s']:.2f} s CPU |"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    tables = {
        "grpc": grpc,
        "grpc-sides": grpc_sides,
        "optimizer": optimizer,
        "sampler": sampler,
        "cold": cold,
        "pbm-parts": pbm_parts,
        "pbm-party": pbm_party,
        "launch": launch,
        "run-startup": run_startup,
        "bitpack": bitpack,
    }
    parser.add_argument("table", choices=list(tables))
    parser.add_argument("source", type=Path)
    args = parser.parse_args()
    print("\n".join(tables[args.table](args.source)))


if __name__ == "__main__":
    main()
