"""One privacy statement for a PBM setting: epsilon with every cross-check beside it.

Used by ``vfl privacy`` and ``tools/privacy_table.py``. Everything is computed by the pure
functions in ``analysis``, ``worstcase`` and ``divergence``; this module only collects and formats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vfl.privacy.analysis import (
    DEFAULT_ORDERS,
    Conversion,
    compose_rdp,
    gaussian_rdp,
    paper_relative_epsilon,
    paper_relative_rdp,
    pbm_rdp,
    rdp_to_epsilon,
)
from vfl.privacy.worstcase import Inputs, RelaxationBound, relaxation_bound, search_worst_case

SHOWN_ORDERS = (2.0, 8.0, 32.0)
CONVERSIONS = {
    "improved": "RDP to DP by Balle et al. 2020 / Canonne, Kamath and Steinke 2020",
    "mironov": "RDP to DP by Mironov 2017, the looser conversion",
}


@dataclass(frozen=True)
class PrivacyReport:
    """Epsilon of a PBM setting and its cross-checks (see ``privacy_report``).

    Attributes:
        trials: ``b``.
        beta: ``β``.
        parties: ``M``.
        dimension: ``P``.
        uses: ``K``, the uses of each sample that were composed.
        uses_exact: Whether ``uses`` is an exact count (shuffled epochs) or the paper's expectation.
        delta: ``δ``.
        conversion: The RDP to DP conversion used.
        epsilon: The guarantee: ``(epsilon, delta)``-DP per sample and party, against the server
            alone (it sees the secure sum of all ``parties``' counts).
        order: The Rényi order that attains ``epsilon``.
        coalition_epsilon: The same against any party or coalition of parties, with or without
            the server: they know their own counts, so only the target party's noise counts
            (``M = 1``).
        optimal_inputs: Other parties' inputs ``x / C`` attaining the worst case at ``order``.
        shown_orders: Orders at which the per-coordinate figures below are given.
        coordinate_rdp: Worst-case per-coordinate, per-release RDP at ``shown_orders``.
        worst_inputs: The other parties' inputs attaining each of ``coordinate_rdp``.
        typical_rdp: The same with the other parties' inputs at 0 (not a guarantee).
        gaussian_rdp: The normal approximation (a cross-check, not a guarantee).
        relative_rdp: The paper's big-O rate at order 2 with c = 1 (RELATIVE, not a guarantee).
        relative_epsilon: The paper's Lemma 2.4 with c = 1 (RELATIVE, not a guarantee).
        certificate: The relaxation upper bound at ``shown_orders`` if requested, else ``None``.
    """

    trials: int
    beta: float
    parties: int
    dimension: int
    uses: float
    uses_exact: bool
    delta: float
    conversion: Conversion
    epsilon: float
    order: float
    coalition_epsilon: float
    optimal_inputs: Inputs
    shown_orders: tuple[float, ...]
    coordinate_rdp: tuple[float, ...]
    worst_inputs: tuple[Inputs, ...]
    typical_rdp: tuple[float, ...]
    gaussian_rdp: tuple[float, ...]
    relative_rdp: float
    relative_epsilon: float
    certificate: RelaxationBound | None


def privacy_report(
    *,
    trials: int,
    beta: float,
    parties: int,
    dimension: int,
    uses: float,
    delta: float,
    uses_exact: bool = True,
    conversion: Conversion = "improved",
    orders: Sequence[float] = DEFAULT_ORDERS,
    shown_orders: Sequence[float] = SHOWN_ORDERS,
    certify: bool = False,
) -> PrivacyReport:
    """Compute the guarantee and the cross-checks for one setting (docs/privacy.md).

    The worst case is searched on the union of ``orders`` and ``shown_orders``; ``certify`` adds
    the relaxation bound at ``shown_orders`` (seconds when ``M b`` is around a thousand).
    """
    grid = np.array(sorted(set(orders) | set(shown_orders)))
    worst = search_worst_case(trials=trials, beta=beta, parties=parties, orders=grid)
    total = compose_rdp(per_coordinate=worst.rdp, dimension=dimension, uses=uses)
    epsilon, order = rdp_to_epsilon(orders=grid, rdp=total, delta=delta, conversion=conversion)
    alone = search_worst_case(trials=trials, beta=beta, parties=1, orders=grid).rdp
    coalition_epsilon, _ = rdp_to_epsilon(
        orders=grid,
        rdp=compose_rdp(per_coordinate=alone, dimension=dimension, uses=uses),
        delta=delta,
        conversion=conversion,
    )
    shown = [int(np.flatnonzero(grid == alpha)[0]) for alpha in shown_orders]
    shown_list = list(shown_orders)
    typical = pbm_rdp(
        trials=trials, beta=beta, parties=parties, orders=shown_list, worst_case=False
    )
    certificate = (
        relaxation_bound(trials=trials, beta=beta, parties=parties, orders=shown_list)
        if certify
        else None
    )
    gaussian = gaussian_rdp(trials=trials, beta=beta, parties=parties, orders=shown_list)
    return PrivacyReport(
        trials=trials,
        beta=beta,
        parties=parties,
        dimension=dimension,
        uses=uses,
        uses_exact=uses_exact,
        delta=delta,
        conversion=conversion,
        epsilon=epsilon,
        order=order,
        coalition_epsilon=coalition_epsilon,
        optimal_inputs=worst.inputs[int(np.flatnonzero(grid == order)[0])],
        shown_orders=tuple(float(alpha) for alpha in shown_orders),
        coordinate_rdp=tuple(worst.rdp[i] for i in shown),
        worst_inputs=tuple(worst.inputs[i] for i in shown),
        typical_rdp=tuple(typical.tolist()),
        gaussian_rdp=tuple(gaussian.tolist()),
        relative_rdp=paper_relative_rdp(
            trials=trials, beta=beta, parties=parties, uses=uses, order=2.0
        ),
        relative_epsilon=paper_relative_epsilon(
            trials=trials, beta=beta, parties=parties, uses=uses, delta=delta
        ),
        certificate=certificate,
    )


def format_report(report: PrivacyReport) -> str:
    """Human-readable lines for ``vfl privacy``."""
    how = "shuffled epochs, exact" if report.uses_exact else "paper's T*B/N, an expectation"
    lines = [
        f"PBM b={report.trials} beta={report.beta} M={report.parties} P={report.dimension}, "
        f"{report.uses:g} uses per sample ({how}), delta={report.delta:g}",
        f"epsilon = {report.epsilon:.6g}  (per sample and party, l-inf adjacency, worst case"
        f" over the other parties' inputs; {CONVERSIONS[report.conversion]})",
        f"  covers: each party's features against the server alone, which learns only the"
        f" secure sum of all M = {report.parties} parties' counts",
        f"coalition epsilon = {report.coalition_epsilon:.6g}  (against any party or coalition"
        " of parties, with or without the server: they know their own counts, so only the"
        " target party's noise counts, M = 1)",
        f"optimal order alpha = {report.order:.6g}; other parties' inputs x/C attaining the"
        f" worst case there: {_inputs(report.optimal_inputs)}",
        "per-coordinate, per-release RDP (nats):",
        "  alpha   worst case   others at 0   Gaussian approx.   worst-case inputs x/C",
    ]
    for i, alpha in enumerate(report.shown_orders):
        lines.append(
            f"  {alpha:<6g}  {report.coordinate_rdp[i]:<11.5g}  {report.typical_rdp[i]:<12.5g}"
            f"  {report.gaussian_rdp[i]:<17.5g}  {_inputs(report.worst_inputs[i])}"
        )
    if report.certificate is not None:
        bound = report.certificate
        marks = ", ".join(
            f"alpha={a:g}: {r:.5g} ({'attained' if hit else 'not attained'})"
            for a, r, hit in zip(bound.orders, bound.rdp, bound.attained, strict=True)
        )
        lines.append(f"certified upper bound (relaxation): {marks}")
    lines.append(
        f"RELATIVE ONLY, not a guarantee (paper's big-O with c = 1, no P): RDP at alpha=2"
        f" {report.relative_rdp:.4g}, epsilon {report.relative_epsilon:.4g}"
    )
    return "\n".join(lines)


def _inputs(inputs: Inputs) -> str:
    return "(" + ", ".join(f"{x:+g}" for x in inputs) + ")" if inputs else "(no other parties)"


def format_label_report(noise_multiplier: float, parties: int, epochs: int, delta: float) -> str:
    """``vfl privacy --noise-multiplier``: the labels' epsilon under Gaussian gradient noise.

    Each of ``parties`` passive parties receives each sample's row once per epoch with a noise
    draw of its own: a Gaussian release of sensitivity ``2C`` and noise ``zC`` each. A coalition
    of all of them holds ``parties`` releases per epoch; one party alone holds one.
    """
    from vfl.privacy.budget import GaussianEpochBudget
    from vfl.privacy.events import GaussianEvent, SelfComposedEvent
    from vfl.privacy.gradient_noise import LABEL_SENSITIVITY

    release = GaussianEvent(noise_multiplier, sensitivity=LABEL_SENSITIVITY)
    pooled = GaussianEpochBudget(SelfComposedEvent(release, parties), delta)
    alone = GaussianEpochBudget(release, delta)
    return "\n".join(
        [
            f"Gaussian gradient noise z={noise_multiplier:g} to {parties} passive part"
            f"{'y' if parties == 1 else 'ies'}, {epochs} epochs, sensitivity 2C, delta={delta:g}",
            f"label epsilon = {pooled.epsilon(epochs):.6g}  ({pooled.describe()})",
            "  covers: the labels against any passive party and any coalition of passive"
            f" parties pooling what they receive ({parties * epochs} releases of each sample in"
            " all); the server holds the labels",
            f"one-party label epsilon = {alone.epsilon(epochs):.6g}  (one passive party alone:"
            f" {epochs} releases of each sample)",
            f"RDP cross-check = {pooled.rdp_epsilon(epochs):.6g}  (dp-accounting's RDP"
            " accountant for the coalition; never below the PLD epsilon)",
        ]
    )
