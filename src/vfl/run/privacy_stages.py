"""The privacy stages a config describes: mechanism stages, gradient noise, their randomness.

``party_privacy`` and ``server_privacy`` build the stages that the configured mechanism's
registration names (``vfl.config.mechanisms``); PBM's are ``pbm_party`` and ``pbm_server``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, cast

from vfl.config import RunConfig
from vfl.config.mechanisms import MECHANISMS
from vfl.privacy.gradient_noise import GradientNoise
from vfl.privacy.pbm import PoissonBinomialMechanism
from vfl.privacy.randomness import count_sampler, mechanism_generator
from vfl.privacy.secure_sum import PartySecureSum, ServerSecureSum
from vfl.protocol.options import ServerPrivacy
from vfl.registry import resolve
from vfl.seeding import derive_seed

NoiseSource = Literal["seeded", "os"]
"""Where privacy randomness comes from: seeded (reproducible simulation) or the OS."""


def party_privacy(config: RunConfig, party: int, *, deployed: bool) -> PartySecureSum | None:
    """A party's stage of the configured mechanism, or ``None`` when it has none."""
    reference = MECHANISMS[config.privacy.mechanism].party_stage
    if not reference:
        return None
    build = cast(Callable[..., PartySecureSum], resolve(reference))
    return build(config, party, deployed=deployed)


def server_privacy(
    config: RunConfig, party_ids: tuple[int, ...], width: int
) -> ServerPrivacy | None:
    """The server's stage of the configured mechanism, or ``None`` when it has none."""
    reference = MECHANISMS[config.privacy.mechanism].server_stage
    if not reference:
        return None
    build = cast(Callable[..., ServerPrivacy], resolve(reference))
    return build(config, party_ids, width)


def mechanism(config: RunConfig) -> PoissonBinomialMechanism:
    """The configured Poisson Binomial Mechanism."""
    privacy = config.privacy
    return PoissonBinomialMechanism(clip=privacy.clip, trials=privacy.trials, beta=privacy.beta)


def secure_aggregation(config: RunConfig) -> bool:
    """Whether counts are masked (``auto`` means on with PBM)."""
    return config.privacy.secure_aggregation != "off"


def noise_source(config: RunConfig, *, deployed: bool) -> NoiseSource:
    """Where the PBM noise comes from: ``privacy.randomness``, else the OS when deployed.

    ``auto`` means the operating system in a deployment and a seeded generator in simulation.
    """
    chosen = config.privacy.randomness
    if chosen == "auto":
        return "os" if deployed else "seeded"
    return chosen


def compress_evaluation(config: RunConfig, *, deployed: bool) -> bool:
    """Whether evaluation embeddings go through the embedding compressor.

    ``compress.evaluation``; ``auto`` means yes in a deployment. A mechanism whose uploads
    the server can only sum (PBM) sums its evaluation embeddings securely instead.
    """
    if MECHANISMS[config.privacy.mechanism].sums_only:
        return False
    chosen = config.compress.evaluation
    return deployed if chosen == "auto" else chosen == "on"


def pbm_party(config: RunConfig, party: int, *, deployed: bool) -> PartySecureSum:
    """A party's PBM stage.

    With OS randomness (``noise_source``; always in a deployment) the mechanism's sampler is
    keyed from the operating system, never from ``train.seed``.
    """
    os_entropy = noise_source(config, deployed=deployed) == "os"
    seed = derive_seed(config.train.seed, "pbm", party)
    sampler = count_sampler(config.privacy.sampler, seed, secure_rng=os_entropy)
    return PartySecureSum(party, mechanism(config), sampler, secure=secure_aggregation(config))


def pbm_server(config: RunConfig, party_ids: tuple[int, ...], width: int) -> ServerPrivacy:
    """The server's PBM stage: secure sums over ``party_ids`` of ``width``-wide embeddings.

    Its event counts every party's noise only when the counts are summed securely.
    """
    pbm = mechanism(config)
    secure = secure_aggregation(config)
    secure_sum = ServerSecureSum(
        pbm, party_ids, secure=secure, fraction_bits=config.privacy.eval_fraction_bits
    )
    # Counts sent in the clear show the server each party's own count: its protection is that
    # of one party's noise alone (M = 1, docs/privacy.md), not of the sum over every party.
    contributors = len(party_ids) if secure else 1
    return ServerPrivacy(
        secure_sum=secure_sum,
        event=pbm.event(parties=contributors, dimension=width),
        delta=config.privacy.delta,
    )


def gradient_noise(config: RunConfig, *, deployed: bool) -> GradientNoise | None:
    """The label holder's gradient clipping and noise, or ``None`` when off.

    Its randomness comes from where PBM's does (``noise_source``): the operating system in a
    deployment, a generator seeded from ``(train.seed, "gradient-noise")`` in simulation.
    """
    noise = config.privacy.gradient_noise
    if not noise.enabled:
        return None
    os_entropy = noise_source(config, deployed=deployed) == "os"
    seed = derive_seed(config.train.seed, "gradient-noise")
    return GradientNoise(
        noise.clip, noise.noise_multiplier, mechanism_generator(seed, secure_rng=os_entropy)
    )
