"""Extra ``summary.json`` sections: the C-VFL cost formulas and the time to target.

The paper's bytes per round sit beside the measured ones, and the time to target is given under
each latency (C-VFL, Castiglia et al., ICML 2022: Section 3 and Tables 2-5;
``vfl.results.cvfl_costs`` gives the formulas).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vfl.results.cvfl_costs import (
    literal_bits_per_round,
    private_labels_bits_per_round,
    reproduction_bits_per_round,
    time_to_target,
)


@dataclass(frozen=True)
class RoundShape:
    """What one round sends, as the paper's formulas count it.

    Attributes:
        shared_labels: C-VFL Algorithm 1 (a broadcast view) rather than returned gradients.
        batch: Samples per round (B).
        widths: Every party's embedding width (P_m), ascending party id.
        server_parameters: Parameters of the server model (|θ0|).
        embedding_bits: The bits per component the paper counts for an embedding (32 when
            uncompressed).
        gradient_bits: The same for a returned gradient (private labels).
        rounds_per_epoch: Rounds in one epoch.
    """

    shared_labels: bool
    batch: int
    widths: Sequence[int]
    server_parameters: int
    embedding_bits: int
    gradient_bits: int
    rounds_per_epoch: int


def paper_accounting(shape: RoundShape, *, rounds: int, measured_bytes: int) -> dict[str, Any]:
    """Measured bytes per round beside the C-VFL formulas (``vfl.results.cvfl_costs``)."""
    bits = shape.embedding_bits
    widths = list(shape.widths)
    report: dict[str, Any] = {
        "bits_per_component": bits,
        "rounds_per_epoch": shape.rounds_per_epoch,
        "measured_bytes_per_round": measured_bytes / max(rounds, 1),
    }
    if shape.shared_labels:
        literal = literal_bits_per_round(
            bits=bits, batch=shape.batch, widths=widths, server_parameters=shape.server_parameters
        )
        report["paper_literal_bytes_per_round"] = literal / 8
        if len(set(widths)) == 1:
            reproduction = reproduction_bits_per_round(
                bits=bits,
                batch=shape.batch,
                width=widths[0],
                parties=len(widths),
                server_parameters=shape.server_parameters,
            )
            report["paper_reproduction_bytes_per_round"] = reproduction / 8
    else:
        total = private_labels_bits_per_round(
            bits=bits,
            gradient_bits=shape.gradient_bits,
            batch=shape.batch,
            widths=widths,
        )
        report["paper_bytes_per_round"] = total / 8
    return report


def time_to_reach(
    summary: dict[str, Any],
    records: list[dict[str, Any]],
    *,
    local_steps: int,
    compute_ms: float,
    latencies_ms: Sequence[float],
) -> dict[str, Any] | None:
    """Seconds to the target under each latency (C-VFL Table 5).

    ``compute_ms = 0`` uses the run's measured training time per local step.
    """
    reached = summary.get("target", {}).get("reached")
    if reached is None:
        return None
    compute = compute_ms / 1000
    if compute == 0:
        train_seconds = sum(r["epoch_train_seconds"] for r in records)
        compute = train_seconds / max(summary["rounds"] * local_steps, 1)
    seconds = {
        f"{latency:g}": time_to_target(
            rounds=reached["round"],
            local_steps=local_steps,
            compute_seconds=compute,
            latency_seconds=latency / 1000,
        )
        for latency in latencies_ms
    }
    return {
        "compute_seconds_per_step": compute,
        "local_steps": local_steps,
        "seconds_by_latency_ms": seconds,
    }
