"""Rules between a privacy mechanism (or gradient noise) and the rest of the run config.

What a mechanism needs is read from its registration's capabilities (``vfl.config.mechanisms``:
``sums_only``, ``bounded``, ``protocol``, ``noises``), never from its name. Registered by
importing this module (``vfl.config.rules`` does).
"""

from __future__ import annotations

from vfl.config.buildable import NO_COMPRESSOR
from vfl.config.io import check
from vfl.config.mechanisms import MECHANISMS, mechanisms_that, naming
from vfl.config.protocols import AUTO, PROTOCOLS
from vfl.config.schema import RunConfig
from vfl.config.section import rule


@rule(RunConfig)
def _secure_aggregation_sums_pbm_counts(config: RunConfig) -> None:
    if config.privacy.secure_aggregation != "on":
        return
    check(
        config.model.head.fusion == "sum",
        "model.head.fusion",
        "secure aggregation reveals only the sum of the embeddings: use fusion 'sum',"
        f" not {config.model.head.fusion!r}",
    )
    check(
        MECHANISMS[config.privacy.mechanism].sums_only,
        "privacy.secure_aggregation",
        f"'on' aggregates integer counts: set {naming(mechanisms_that('sums_only'))}",
    )


@rule(RunConfig)
def _mechanism_fits_the_model(config: RunConfig) -> None:
    """Sums need sum fusion; a bounded mechanism, bounded embeddings (VFL-PBM section 4)."""
    name = config.privacy.mechanism
    entry = MECHANISMS[name]
    if entry.sums_only:
        check(
            config.model.head.fusion == "sum",
            "model.head.fusion",
            f"privacy.mechanism {name!r} sends counts the server can only sum: use fusion"
            f" 'sum', not {config.model.head.fusion!r}",
        )
    if entry.bounded:
        check(
            config.model.bottom.output_activation == "tanh",
            "model.bottom.output_activation",
            f"privacy.mechanism {name!r} needs bounded embeddings: use 'tanh' (|x| <= 1), not"
            f" {config.model.bottom.output_activation!r}",
        )
        check(
            config.privacy.clip >= 1.0,
            "privacy.clip",
            f"tanh embeddings reach 1, so clip must be >= 1, got {config.privacy.clip}",
        )
    _mechanism_fits_the_protocol(config)


def _mechanism_fits_the_protocol(config: RunConfig) -> None:
    name = config.privacy.mechanism
    entry = MECHANISMS[name]
    if entry.protocol:
        check(
            config.protocol.labels == "private",
            "protocol.labels",
            f"privacy.mechanism {name!r} works with labels private to the server",
        )
        check(
            config.protocol.schedule == "parallel",
            "protocol.schedule",
            f"privacy.mechanism {name!r} uses the parallel schedule",
        )
    if entry.sums_only:
        check(
            config.compress.embedding.name == NO_COMPRESSOR,
            "compress.embedding.name",
            f"with privacy.mechanism {name!r} the uploads are PBM counts; set no embedding"
            " compressor",
        )
        check(
            config.protocol.active_party == 0,
            "protocol.active_party",
            f"privacy.mechanism {name!r} protects every party's features: no party can sit with"
            " the server",
        )


@rule(RunConfig)
def _protocol_fits_the_mechanism(config: RunConfig) -> None:
    """A mechanism that asks for a protocol runs under it, and such a protocol only under it."""
    name, mechanism = config.protocol.name, config.privacy.mechanism
    wanted = MECHANISMS[mechanism].protocol
    check(
        not wanted or name in (AUTO, wanted),
        "protocol.name",
        f"privacy.mechanism {mechanism!r} runs under protocol {wanted!r}, not {name!r}",
    )
    entry = PROTOCOLS.get(name)
    asking = tuple(n for n, m in MECHANISMS.items() if m.protocol == name)
    check(
        entry is None or not entry.by_mechanism or wanted == name,
        "protocol.name",
        f"protocol {name!r} runs only under {naming(asking)}, not privacy.mechanism {mechanism!r}",
    )


@rule(RunConfig)
def _check_sparsify(config: RunConfig) -> None:
    """LVFL sparsification replaces top-k and cannot carry PBM counts."""
    if not config.lightweight.sparsifies:
        return
    check(
        config.compress.embedding.name != "topk",
        "compress.embedding.name",
        "lightweight.beta already sparsifies the uploads; quantize the kept values with"
        " 'scalar' or 'lattice' instead of 'topk'",
    )
    name = config.privacy.mechanism
    check(
        not MECHANISMS[name].sums_only,
        "lightweight.beta",
        f"with privacy.mechanism {name!r} the uploads are PBM counts, which cannot be sparsified",
    )


@rule(RunConfig)
def _budget_needs_a_mechanism(config: RunConfig) -> None:
    privacy = config.privacy
    spends = MECHANISMS[privacy.mechanism].noises or privacy.gradient_noise.enabled
    check(
        privacy.max_epsilon == 0 or spends,
        "privacy.max_epsilon",
        f"a budget needs a mechanism that spends it: {naming(mechanisms_that('noises'))} or"
        " privacy.gradient_noise.noise_multiplier > 0",
    )
