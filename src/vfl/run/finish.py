"""What a run adds to its summary when it finishes: compute, the paper's costs, time to target.

Shared by ``vfl run`` (``vfl.run.runner``) and the deployed server.
"""

from __future__ import annotations

from typing import Any

from vfl.config import RunConfig
from vfl.protocol.loop import ServerLoop
from vfl.results.compute import summarize_compute, write_compute_csv
from vfl.results.costs import RoundShape, paper_accounting, time_to_reach
from vfl.results.files import COMPUTE, SUMMARY, RunDirectory
from vfl.run.privacy_stages import NoiseSource, noise_source
from vfl.run.session import PartyGroup, Session
from vfl.run.stages import nominal_bits


def finish_summary(
    config: RunConfig,
    session: Session[PartyGroup],
    run: RunDirectory,
    *,
    deployed: bool = False,
) -> dict[str, Any]:
    """Add to ``summary.json`` the compute records, the paper's cost formulas, time to target.

    ``deployed``: the run was a deployment (its noise came from the operating system).
    """
    summary = run.read_json(SUMMARY)
    trainer = session.trainer
    if "privacy" in summary:
        summary["privacy"]["noise"] = noise_note(noise_source(config, deployed=deployed))
        if isinstance(trainer, ServerLoop):
            summary["privacy"].update(trainer.privacy_claims())
    logs = session.compute_logs()
    if logs:
        write_compute_csv(run.file(COMPUTE), logs)
        summary["compute"] = compute_summary(session, logs)
    if "bytes" in summary and isinstance(trainer, ServerLoop):
        summary["accounting"] = paper_accounting(
            round_shape(config, trainer),
            rounds=summary["rounds"],
            measured_bytes=summary["bytes"]["train_total"],
        )
    if "target" in summary:
        summary["target"]["time"] = time_to_reach(
            summary,
            run.read_metrics(),
            local_steps=config.protocol.local_steps,
            compute_ms=config.target.compute_ms,
            latencies_ms=config.target.latencies_ms,
        )
    run.write_json(SUMMARY, summary)
    return summary


def noise_note(source: NoiseSource) -> str:
    """What the privacy section of a summary says about where the noise came from."""
    if source == "os":
        return "os: drawn from the operating system"
    return (
        "seeded: reproducible from train.seed, so anyone who knows the seed can regenerate it;"
        " epsilon holds only if the seed is secret (privacy.randomness = 'os' for private runs)"
    )


def round_shape(config: RunConfig, loop: ServerLoop) -> RoundShape:
    """What one round of ``loop`` sends, for the paper's cost formulas."""
    compress = config.compress
    return RoundShape(
        shared_labels=config.protocol.labels == "shared",
        batch=config.train.batch_size,
        widths=list(loop.server.embedding_dims.values()),
        server_parameters=sum(p.numel() for p in loop.server.head.parameters()),
        embedding_bits=nominal_bits(compress.embedding),
        gradient_bits=nominal_bits(compress.gradient),
        rounds_per_epoch=len(loop.sampler),
    )


def compute_summary(session: Session[PartyGroup], logs: dict[int, list[Any]]) -> dict[str, Any]:
    """Per-party compute totals with each party's uploaded training bytes from the ledger."""
    summary = summarize_compute(logs)
    ledger = session.trainer.ledger
    if ledger is not None:
        for party, totals in summary["parties"].items():
            totals["bytes_up"] = ledger.total(phase="train", direction="up", party=int(party))
    return summary
