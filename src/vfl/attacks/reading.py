"""What an attack's result means, beside the epsilons of the run: the table ``vfl attack`` prints.

A protection with an epsilon can still leave an attack near certain (PBM's epsilon is of the
features, not the labels; compression and LVFL have none): each row says so where it reads the
attack's final scores, in the same table as every epsilon the run reports and what it covers.

Readings of a label-inference AUC (the attacker's best sign, ``vfl.attacks.scoring``):
``near certain`` from 0.95, ``leaks`` from 0.60, ``weak`` from 0.55, else ``near chance``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

NEAR_CERTAIN, LEAKS, WEAK = 0.95, 0.60, 0.55

EPSILONS = {
    "epsilon": "ε features (PBM)",
    "epsilon_coalition": "ε features, any coalition",
    "label_epsilon": "ε labels (gradient noise)",
    "label_epsilon_one_party": "ε labels, one party alone",
}


def auc_reading(auc: float) -> str:
    """How far an attacker's AUC is from a guess."""
    if math.isnan(auc):
        return "not scored"
    if auc >= NEAR_CERTAIN:
        return "NEAR CERTAIN: this protection does not stop it"
    if auc >= LEAKS:
        return "leaks: clearly better than a guess"
    if auc >= WEAK:
        return "weak leak"
    return "near chance (0.5)"


def _ratio_reading(value: float, prior: float, *, lower_is_better: bool) -> str:
    """An attack's figure against what guessing gives (the prior)."""
    if math.isnan(value) or math.isnan(prior):
        return "not scored"
    gain = (prior - value) / prior if lower_is_better else (value - prior) / (1 - prior)
    if gain <= 0.01:
        return "no better than a guess"
    return f"{100 * gain:.0f} % of the way from a guess to perfect"


def rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(what, value, reading)`` for every attack score and every epsilon of ``summary``."""
    final = summary.get("final", {})
    table: list[tuple[str, str, str]] = []
    for score in ("direction", "norm"):
        auc = final.get(f"attack_{score}_auc")
        if isinstance(auc, int | float):
            sign = "+" if final.get(f"attack_{score}_sign", 1.0) > 0 else "-"
            value = f"{auc:.3f} (sign {sign})"
            table.append((f"label inference, {score} AUC", value, auc_reading(float(auc))))
    if isinstance(final.get("attack_mse"), int | float):
        mse, prior = float(final["attack_mse"]), float(final.get("attack_mse_prior", math.nan))
        reading = _ratio_reading(mse, prior, lower_is_better=True)
        table.append(("reconstruction MSE", f"{mse:.4g} (guess {prior:.4g})", reading))
    elif isinstance(final.get("attack_accuracy"), int | float) and not table:
        accuracy = float(final["attack_accuracy"])
        prior = float(final.get("attack_accuracy_prior", math.nan))
        reading = _ratio_reading(accuracy, prior, lower_is_better=False)
        table.append(("inferred-label accuracy", f"{accuracy:.3f} (guess {prior:.3f})", reading))
    table.extend(_epsilon_rows(summary.get("privacy", {})))
    return table


def _epsilon_rows(privacy: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    covers = privacy.get("threat_model", {})
    found = [
        (label, f"{float(privacy[key]):.4g}", covers.get(key, ""))
        for key, label in EPSILONS.items()
        if key in privacy
    ]
    if "label_epsilon" not in privacy:
        found.append((EPSILONS["label_epsilon"], "none", "the labels have no DP protection"))
    if "epsilon" not in privacy:
        found.append((EPSILONS["epsilon"], "none", "the features have no DP protection"))
    return found


def format_table(summary: Mapping[str, Any]) -> str:
    """The readings as an aligned plain-text table."""
    table = [("", "value", "reading"), *rows(summary)]
    widths = [max(len(row[i]) for row in table) for i in range(2)]
    return "\n".join(
        f"{what:<{widths[0]}}  {value:<{widths[1]}}  {reading}".rstrip()
        for what, value, reading in table
    )
