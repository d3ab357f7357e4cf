"""Markdown tables of SecureBoost's committed measurements (docs/secureboost.md, "Measurements").

Reads the JSON files the ``bench_boost_*.py`` scripts write under ``--results`` and prints: test
AUC of SecureBoost against XGBoost per seed, seconds per tree by phase, bytes per tree by message
kind, growth with rows, bins and holders, and the label inference by a passive holder.

    .venv/bin/python bench/report_boost.py --results bench/results/secureboost
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def load(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def phases(tree: dict[str, Any]) -> dict[str, float]:
    """Encryption, the holders' histogram work, decryption, transport, the rest."""
    seconds, transport = tree["seconds"], tree["transport_seconds"]
    return {
        "encrypt": seconds.get("encrypt", 0.0),
        "histogram": seconds.get("histogram", 0.0) + seconds.get("split_apply", 0.0) - transport,
        "decrypt": seconds.get("decrypt", 0.0),
        "transport": transport,
        "split_find": seconds.get("split_find", 0.0) + seconds.get("gradients", 0.0),
    }


def auc_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| training rows | seed | trees | test AUC SecureBoost | test AUC XGBoost | difference |"
        " trees = plaintext reference |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        r, meta = run["result"], run["meta"]
        difference = r["auc_secureboost"] - r["auc_xgboost"]
        lines.append(
            f"| {r['train_rows']:,} | {r['seed']} | {meta['trees']} | {r['auc_secureboost']:.5f} |"
            f" {r['auc_xgboost']:.5f} | {f'{difference:+.1e}' if difference else '0'} |"
            f" {'yes' if r['trees_equal_reference'] else 'no'} |"
        )
    return lines


def cost_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| training rows | trees | encrypt s | holders' histograms s | decrypt s | transport s |"
        " split finding s | bytes down | bytes up | ciphertexts decrypted |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    sizes = [run["result"].get("train_rows") or run["result"].get("rows") for run in runs]
    for run, rows in zip(runs, sizes, strict=True):
        r = run["result"]
        trees = r.get("trees") or r.get("per_tree")
        label = f"{rows:,} (seed {r['seed']})" if sizes.count(rows) > 1 else f"{rows:,}"
        split = [phases(t) for t in trees]
        median = {k: statistics.median(s[k] for s in split) for k in split[0]}
        lines.append(
            f"| {label} | {len(trees)} | {median['encrypt']:.1f} | {median['histogram']:.1f} |"
            f" {median['decrypt']:.2f} | {median['transport']:.2f} | {median['split_find']:.2f} |"
            f" {statistics.median(t['bytes_down'] for t in trees):,.0f} |"
            f" {statistics.median(t['bytes_up'] for t in trees):,.0f} |"
            f" {statistics.median(t['ciphertexts_up'] for t in trees):.0f} |"
        )
    return lines


def scaling_table(variants: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| holders | rows | max_bin | passive bins | encrypt s | holders' histograms s |"
        " decrypt s | bytes down | bytes up | gradients | histograms | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for variant in sorted(
        variants,
        key=lambda v: (v["result"]["rows"], v["result"]["holders"], v["result"]["max_bin"]),
    ):
        r = variant["result"]
        tree = r["per_tree"][0]
        split, kinds = phases(tree), tree["bytes_by_kind"]
        bins = "+".join(str(b) for b in r["bins"].values())
        lines.append(
            f"| {r['holders']} | {r['rows']:,} | {r['max_bin']} | {bins} | {split['encrypt']:.1f} |"
            f" {split['histogram']:.1f} | {split['decrypt']:.2f} | {tree['bytes_down']:,} |"
            f" {tree['bytes_up']:,} | {kinds.get('BoostGradients', 0):,} |"
            f" {kinds.get('BoostHistogramReply', 0):,} |"
            f" {r['load_average_before_after'][0][0]:.1f} |"
        )
    return lines


def leakage_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| seed | rows | known labels | spy | AUC from instance spaces | first tree only |"
        " spy's own columns (XGBoost) | label holder's model (train) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        r = run["result"]
        lines.append(
            f"| {r['seed']} | {r['rows']:,} | {r['known_labels']} | party {r['spy']} |"
            f" {r['auc_inference_from_instance_spaces']:.3f} | {r['auc_first_tree_only']:.3f} |"
            f" {r['auc_spy_own_columns_xgboost']:.3f} | {r['auc_label_holder_model_train']:.3f} |"
        )
    return lines


def leakage_by_known(results: Path) -> list[str]:
    """The leakage runs of every known-label share (1%: ``leakage``; others: ``leakage_known``)."""
    runs = load(results / "leakage") + load(results / "leakage_known")
    runs.sort(key=lambda r: (r["result"]["spy"], r["result"]["known_labels"], r["result"]["seed"]))
    return leakage_table(runs)


HE_OPERATIONS = ["encrypt", "encrypt_public", "decrypt", "add", "scalar_mul", "rerandomize"]


def he_table(runs: list[dict[str, Any]]) -> list[str]:
    """Per library and scheme: median ms per operation, speed-up over phe, ciphertext bytes."""
    lines = [
        "| library, scheme | key bits | " + " | ".join(HE_OPERATIONS) + " | ciphertext bytes |",
        "|---|---|" + "---|" * (len(HE_OPERATIONS) + 1),
    ]
    for run in runs:
        medians, speedups = run["median_seconds_per_item"], run["speedup_over_phe"]
        for name, ops in medians.items():
            cells = [
                f"{1e3 * ops[op]:.3f} ms"
                + ("" if name == "phe" else f" ({speedups[name][op]:.2f}x)")
                if op in ops
                else "-"
                for op in HE_OPERATIONS
            ]
            size = run["sizes"][name]["ciphertext_bytes"]
            bits = run["meta"]["bits"]
            lines.append(f"| {name} | {bits} | " + " | ".join(cells) + f" | {size:.0f} |")
    return lines


def published_table(folder: Path) -> list[str]:
    """The published figures (``compare_published.json``), one row each, with their source."""
    lines = [
        "| system | data | rows | features | parties | trees | depth | bins | key bits |"
        " hardware | s per tree | s whole training | AUC | notes | source |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    shown = ["system", "data", "rows", "features", "parties", "trees", "depth", "bins", "key_bits"]
    for entry in json.loads((folder / "compare_published.json").read_text())["published"]:
        cells = [_cell(entry.get(k)) for k in shown]
        cells += [entry["hardware"], _cell(entry.get("seconds_per_tree"))]
        cells += [_cell(entry.get("seconds_whole_training")), _cell(entry.get("auc"))]
        cells += [entry.get("notes", "")]
        lines.append("| " + " | ".join(cells) + f" | <{entry['source']}> |")
    return lines


def vfl_compare_table(folder: Path) -> list[str]:
    """vfl's runs in a published setting (``compare_*.json`` from ``bench_boost_compare.py``)."""
    lines = [
        "| rows | columns | holders | trees run | depth | max_bin | key bits | label-holder"
        " workers | s per tree | encrypt s | holders' histograms s | decrypt s | AUC SecureBoost |"
        " AUC XGBoost, same trees | AUC XGBoost, published tree count | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(folder.glob("compare_*.json")):
        run = json.loads(path.read_text())
        if "result" not in run:
            continue
        meta, r = run["meta"], run["result"]
        split = [phases(t) for t in r["trees"]]
        median = {k: statistics.median(s[k] for s in split) for k in split[0]}
        lines.append(
            f"| {r['train_rows']:,} | {sum(r['columns'].values())} | {len(r['columns'])} |"
            f" {meta['trees']} | {meta['depth']} | {meta['max_bin']} | {meta['key_bits']} |"
            f" {meta['workers']} | {r['train_seconds'] / meta['trees']:.1f} |"
            f" {median['encrypt']:.1f} | {median['histogram']:.1f} | {median['decrypt']:.1f} |"
            f" {r['auc_secureboost']:.5f} | {r['auc_xgboost_same_trees']:.5f} |"
            f" {r['auc_xgboost_published_trees']:.5f} ({meta['published_trees']} trees) |"
            f" {r['load_average_before_after'][0][0]:.1f} to"
            f" {r['load_average_before_after'][1][0]:.1f} |"
        )
    return lines


def _cell(value: object) -> str:
    if value is None:
        return "not stated"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("bench/results/secureboost"))
    args = parser.parse_args()
    comparisons = [
        run
        for folder in sorted(args.results.glob("adult_*"))
        for run in load(folder)
        if "result" in run
    ]
    sections = [
        ("AUC", auc_table(comparisons)),
        ("Cost per tree (medians)", cost_table(comparisons)),
        ("Growth", scaling_table(load(args.results / "scaling_2000"))),
        ("Label leakage", leakage_table(load(args.results / "leakage"))),
        ("Label leakage by known labels", leakage_by_known(args.results)),
        ("phe against HEU", he_table(load(args.results / "he"))),
        ("Published SecureBoost figures", published_table(args.results / "compare")),
        ("vfl in a published setting", vfl_compare_table(args.results / "compare")),
    ]
    for title, lines in sections:
        print(f"### {title}\n")
        print("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
