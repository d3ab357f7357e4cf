"""Extra ``summary.json`` sections: the paper's cost formulas and time to target."""

from __future__ import annotations

from typing import Any

from vfl.config import RunConfig
from vfl.protocol.loop import ServerLoop
from vfl.results.cvfl_costs import (
    literal_bits_per_round,
    nominal_bits,
    private_labels_bits_per_round,
    reproduction_bits_per_round,
    time_to_target,
)
from vfl.run.simulation import Simulation


def paper_accounting(
    config: RunConfig, simulation: Simulation, rounds: int, measured_bytes: int
) -> dict[str, Any]:
    """Measured bytes per round beside the C-VFL formulas (spec cvfl.md sections 4.2, 4.3)."""
    trainer = simulation.trainer
    if not isinstance(trainer, ServerLoop):
        return {}
    server = trainer.server
    widths = list(server.embedding_dims.values())
    batch = config.train.batch_size
    embedding = config.compress.embedding
    bits = nominal_bits(embedding.name, embedding.bits)
    report: dict[str, Any] = {
        "bits_per_component": bits,
        "rounds_per_epoch": len(trainer.sampler),
        "measured_bytes_per_round": measured_bytes / max(rounds, 1),
    }
    if config.protocol.labels == "shared":
        theta0 = sum(p.numel() for p in server.head.parameters())
        literal = literal_bits_per_round(
            bits=bits, batch=batch, widths=widths, server_parameters=theta0
        )
        report["paper_literal_bytes_per_round"] = literal / 8
        if len(set(widths)) == 1:
            reproduction = reproduction_bits_per_round(
                bits=bits,
                batch=batch,
                width=widths[0],
                parties=len(widths),
                server_parameters=theta0,
            )
            report["paper_reproduction_bytes_per_round"] = reproduction / 8
    else:
        gradient = config.compress.gradient
        total = private_labels_bits_per_round(
            bits=bits,
            gradient_bits=nominal_bits(gradient.name, gradient.bits),
            batch=batch,
            widths=widths,
        )
        report["paper_bytes_per_round"] = total / 8
    return report


def time_to_reach(
    config: RunConfig, summary: dict[str, Any], records: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Seconds to the target under each configured latency (spec cvfl.md section 7)."""
    reached = summary.get("target", {}).get("reached")
    if reached is None:
        return None
    steps = config.protocol.local_steps
    compute = config.target.compute_ms / 1000
    if compute == 0:
        train_seconds = sum(r["epoch_train_seconds"] for r in records)
        compute = train_seconds / max(summary["rounds"] * steps, 1)
    seconds = {
        f"{latency:g}": time_to_target(
            rounds=reached["round"],
            local_steps=steps,
            compute_seconds=compute,
            latency_seconds=latency / 1000,
        )
        for latency in config.target.latencies_ms
    }
    return {
        "compute_seconds_per_step": compute,
        "local_steps": steps,
        "seconds_by_latency_ms": seconds,
    }
