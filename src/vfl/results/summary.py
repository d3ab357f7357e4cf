"""``summary.json``: final and best metrics, traffic, and what it took to reach a target."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

LOWER_IS_BETTER = ("test_loss", "train_loss")


@dataclass(frozen=True)
class Target:
    """A metric value to reach, e.g. ``Target("test_accuracy", 0.97)``.

    For losses the target is reached when the metric falls to ``value`` or below; for every other
    metric when it rises to ``value`` or above.
    """

    metric: str
    value: float

    @property
    def higher_is_better(self) -> bool:
        """Whether larger metric values are better."""
        return self.metric not in LOWER_IS_BETTER

    def reached_by(self, record: dict[str, Any]) -> bool:
        """Whether a metrics record meets the target."""
        value = record.get(self.metric)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        return bool(value >= self.value if self.higher_is_better else value <= self.value)


def first_reaching(records: list[dict[str, Any]], target: Target) -> dict[str, Any] | None:
    """Epoch, round, bytes and time at the first evaluation that meets ``target``, or ``None``."""
    for record in records:
        if target.reached_by(record):
            reached = {
                "epoch": record["epoch"],
                "round": record["round"],
                "wall_time": record["wall_time"],
            }
            if "bytes_up" in record:
                reached["bytes"] = record["bytes_up"] + record["bytes_down"]
            return reached
    return None


def best_values(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """For each test metric, its best value over the records and the epoch it came at."""
    best: dict[str, dict[str, float]] = {}
    for name in (k for k in records[-1] if k.startswith("test_")):
        values = [
            (r[name], r["epoch"])
            for r in records
            if r.get(name) is not None and not math.isnan(r[name])
        ]
        if values:
            pick = min if name in LOWER_IS_BETTER else max
            value, epoch = pick(values, key=lambda pair: pair[0])
            best[name] = {"value": value, "epoch": epoch}
    return best


def summarize(records: list[dict[str, Any]], *, target: Target | None = None) -> dict[str, Any]:
    """The summary of a run from its metrics records (``metrics.jsonl``)."""
    final = records[-1]
    summary: dict[str, Any] = {
        "epochs": final["epoch"],
        "rounds": final["round"],
        "final": {k: v for k, v in final.items() if k.startswith(("test_", "train_", "attack_"))},
        "best": best_values(records),
        "wall_time": final["wall_time"],
    }
    if "bytes_up" in final:
        up, down = final["bytes_up"], final["bytes_down"]
        summary["bytes"] = {
            "train_up": up,
            "train_down": down,
            "train_total": up + down,
            "eval_total": final["bytes_eval"],
            "per_round": (up + down) / max(final["round"], 1),
        }
    if "epsilon" in final:
        summary["privacy"] = {"epsilon": final["epsilon"], "delta": final["delta"]}
        if "epsilon_coalition" in final:
            summary["privacy"]["epsilon_coalition"] = final["epsilon_coalition"]
    if "label_epsilon" in final:
        labels = {"label_epsilon": final["label_epsilon"], "label_delta": final["label_delta"]}
        if "label_epsilon_one_party" in final:
            labels["label_epsilon_one_party"] = final["label_epsilon_one_party"]
        summary["privacy"] = {**summary.get("privacy", {}), **labels}
    if target is not None:
        summary["target"] = {
            "metric": target.metric,
            "value": target.value,
            "reached": first_reaching(records, target),
        }
    return summary
