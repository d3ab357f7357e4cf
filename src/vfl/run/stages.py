"""Every pipeline stage a config describes, built through the registries that own them.

Link codecs (``vfl.compress`` compressors, bit schedules, LVFL sparsification), local steps and
learning-rate schedules, each party's lightweighting state, and the
name of the protocol loop. Nothing else turns these config sections into objects.
"""

from __future__ import annotations

import torch

from vfl.compress.base import Compressor
from vfl.compress.codec import MessageSeeds, TensorCodec
from vfl.compress.compressor_codec import CompressorCodec
from vfl.compress.identity import Identity
from vfl.compress.registry import COMPRESSORS, make_compressor, parameters
from vfl.compress.sparsify import SparsifyingCodec
from vfl.config import CompressorConfig, RunConfig
from vfl.config.buildable import NO_COMPRESSOR, compressor_parameters
from vfl.config.protocols import chosen_protocol
from vfl.models.optim import LearningRateSchedule
from vfl.protocol.options import Codecs, LoopOptions, ServerPrivacy
from vfl.protocol.sampler import BatchSampler
from vfl.prune.lightweight import Lightweighting
from vfl.roles.local import LocalSteps
from vfl.run.privacy_stages import compress_evaluation, gradient_noise
from vfl.schedules import SCHEDULES, bit_schedule, ratio_schedule
from vfl.seeding import derive_seed

LOSSLESS = CompressorConfig(name=Identity.name)
"""The link config of float32 payloads, where a protocol needs a payload but no compressor."""


def compressor(config: CompressorConfig, bits: int) -> Compressor:
    """The registered compressor a link config names, with ``bits`` bits per component."""
    return make_compressor(config.name, **compressor_parameters(config, bits))


def codec(config: CompressorConfig) -> TensorCodec | None:
    """The codec of one link, or ``None`` for plain float32 tensors (``name = "none"``).

    Its bits follow the link's registered bit schedule; a compressor that ``selects`` (top-k)
    is steered by the previous step's gradient where ``select = "gradient"``.
    """
    if config.name == NO_COMPRESSOR:
        return None
    registered = COMPRESSORS[config.name]
    use_scores = registered.selects and config.select == "gradient"
    if SCHEDULES[config.schedule].constant:
        return CompressorCodec(compressor(config, config.bits), use_scores=use_scores)
    schedule = bit_schedule(
        config.schedule, bits=config.bits, steps=config.steps, max_bits=registered.max_bits
    )

    def build(bits: int) -> Compressor:
        return compressor(config, bits)

    return CompressorCodec(build, bits_at=schedule.value_at, use_scores=use_scores)


def is_plain(config: CompressorConfig) -> bool:
    """Whether a link sends float32 values: no compressor, or a lossless one."""
    return config.name == NO_COMPRESSOR or COMPRESSORS[config.name].lossless


def nominal_bits(config: CompressorConfig) -> int:
    """Bits per component the C-VFL paper counts for a link: 32 when its values are plain."""
    return 32 if is_plain(config) else config.bits


def codecs(config: RunConfig) -> Codecs:
    """The codecs of every link, as the protocol loop needs them.

    With shared labels the view always travels as compressed payloads (identity when no
    compressor is set), and the server model uses the embedding compressor unless it has its
    own (the C-VFL authors' choice). Gradients are compressed only with private labels.
    """
    compress = config.compress
    if config.protocol.labels == "private":
        return Codecs(
            embedding=_sparse_decoder(config, codec(compress.embedding)),
            gradient=codec(compress.gradient),
        )
    embedding = compress.embedding if compress.embedding.name != NO_COMPRESSOR else LOSSLESS
    server_model = (
        compress.server_model if compress.server_model.name != NO_COMPRESSOR else embedding
    )
    return Codecs(
        embedding=_sparse_decoder(config, codec(embedding)), server_model=codec(server_model)
    )


def _value_codec(config: RunConfig, link: TensorCodec | None) -> TensorCodec | None:
    """What encodes the kept values of a sparsified upload: a quantizer, or plain float32."""
    return None if is_plain(config.compress.embedding) else link


def _sparse_decoder(config: RunConfig, link: TensorCodec | None) -> TensorCodec | None:
    """With LVFL sparsification, every embedding payload is decoded as a sparse one."""
    if not config.lightweight.sparsifies:
        return link
    return SparsifyingCodec(inner=_value_codec(config, link))


def uplink(config: RunConfig, party: int) -> TensorCodec | None:
    """The codec party ``party`` encodes its embeddings with (its own ``β`` schedule)."""
    embedding = config.compress.embedding
    if config.protocol.labels == "shared" and embedding.name == NO_COMPRESSOR:
        embedding = LOSSLESS
    link = codec(embedding)
    if not config.lightweight.sparsifies:
        return link
    beta = lightweighting(config, party).beta
    return SparsifyingCodec(beta.value_at, inner=_value_codec(config, link))


def lightweighting(config: RunConfig, party: int) -> Lightweighting:
    """Party ``party``'s LVFL schedules (its own ``[[lightweight.party]]`` entry, if any)."""
    alpha, beta = config.lightweight.schedules_of(party)
    return Lightweighting(
        ratio_schedule(alpha.spec(), name=f"lightweight alpha of party {party}"),
        ratio_schedule(beta.spec(), name=f"lightweight beta of party {party}"),
        after_upload=config.lightweight.prune_at == "after_upload",
    )


def learning_rate(config: RunConfig, num_train: int) -> LearningRateSchedule | None:
    """The per-round learning rate, or ``None`` for the optimizer's constant rate.

    Per-epoch schedules need the rounds of an epoch: ``num_train`` rows in batches of
    ``train.batch_size`` (the last one left out with ``train.drop_last``), as the sampler makes
    them; every role computes the same from its own aligned rows.
    """
    optimizer = config.train.optimizer
    if optimizer.lr_schedule == "constant":
        return None
    return LearningRateSchedule(
        optimizer.lr,
        optimizer.lr_schedule,
        gamma=optimizer.lr_gamma,
        step_epochs=optimizer.lr_step_epochs,
        rounds_per_epoch=max(1, len(sampler(config, num_train))),
    )


def local_steps(config: RunConfig) -> LocalSteps:
    """Q and the proximal weight."""
    return LocalSteps(config.protocol.local_steps, config.protocol.proximal_mu)


BOUNDED_ACTIVATIONS = ("tanh", "sigmoid")


def risky_settings(config: RunConfig) -> list[str]:
    """Allowed but risky combinations, each as a sentence naming the keys and what to do."""
    advice = []
    embedding = config.compress.embedding
    unbounded = config.model.bottom.output_activation not in BOUNDED_ACTIVATIONS
    ranged = embedding.name != NO_COMPRESSOR and "low" in parameters(embedding.name)
    if ranged and embedding.range == "message" and unbounded:
        advice.append(
            f"compress.embedding: a {embedding.bits}-bit {embedding.name} quantizer with a"
            " per-message range on unbounded embeddings (model.bottom.output_activation ="
            f" {config.model.bottom.output_activation!r}) spends its levels on each message's"
            " outliers; at 2-3 bits training can degrade badly. Bound the embeddings"
            " (output_activation = 'tanh') and use compress.embedding.range = 'fixed' with"
            " low/high, or use more bits"
        )
    return advice


def use_threads(threads: int) -> None:
    """Give torch ``threads`` CPU threads (0 leaves torch's default); call it before any tensor."""
    if threads > 0:
        torch.set_num_threads(threads)


def loop_options(
    config: RunConfig,
    num_train: int,
    privacy: ServerPrivacy | None = None,
    *,
    deployed: bool = False,
) -> LoopOptions:
    """The server loop's local steps, link codecs, message seeds and learning rates."""
    return LoopOptions(
        steps=local_steps(config),
        codecs=codecs(config),
        seeds=MessageSeeds(config.train.seed),
        learning_rate=learning_rate(config, num_train),
        privacy=privacy,
        compress_evaluation=compress_evaluation(config, deployed=deployed),
        active_party=config.protocol.active_party,
        gradient_noise=gradient_noise(config, deployed=deployed),
        delta=config.privacy.delta,
        pipeline=config.protocol.pipeline,
    )


def protocol_name(config: RunConfig) -> str:
    """The registered protocol (``vfl.config.protocols``) whose loop runs the configured run."""
    return chosen_protocol(config.protocol.name, config.privacy.mechanism)


def sampler(config: RunConfig, num_train: int) -> BatchSampler:
    """The server's batch order, seeded by ``(train.seed, "batches")``."""
    train = config.train
    seed = derive_seed(train.seed, "batches")
    return BatchSampler(
        num_train, train.batch_size, shuffle=train.shuffle, seed=seed, drop_last=train.drop_last
    )
