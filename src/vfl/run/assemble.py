"""Build every role from a run config: the same objects in simulation and in deployment.

A party process and the simulator both call ``party_from_config``; the server process and the
simulator both call ``server_from_config`` and ``trainer_from_config``. So any protocol option
(labels mode, local steps, compression, learning-rate schedule) behaves identically whatever
transport carries the messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from vfl.compress.base import Compressor
from vfl.compress.identity import Identity
from vfl.compress.lattice import LatticeQuantizer
from vfl.compress.links import CompressorCodec
from vfl.compress.pipeline import MessageSeeds, TensorCodec
from vfl.compress.scalar import ScalarQuantizer
from vfl.compress.schedule import DiminishingBits, StepBits
from vfl.compress.sparsify import SparsifyingCodec
from vfl.compress.topk import TopK
from vfl.config import CompressorConfig, RunConfig
from vfl.errors import ConfigError
from vfl.models.build import build_bottom, build_head
from vfl.models.optim import LearningRateSchedule, optimizer_factory
from vfl.privacy.pbm import PoissonBinomialMechanism
from vfl.privacy.secure_sum import PartySecureSum, ServerSecureSum, mechanism_generator
from vfl.protocol.loop import Links, LoopOptions, ServerLoop
from vfl.protocol.private_sum import PrivateSumTraining
from vfl.protocol.sampler import BatchSampler
from vfl.protocol.shared import SharedLabelsTraining
from vfl.protocol.split import SequentialSplitLearning, SplitLearning
from vfl.prune.lightweight import Lightweighting
from vfl.results.metrics import Task
from vfl.roles.local import LocalSteps
from vfl.roles.party import Party, PartyOptions, SharedLabels
from vfl.roles.server import Server
from vfl.seeding import derive_seed, torch_seed
from vfl.transport.base import Transport
from vfl.wire import SPLIT_TRAIN

IDENTITY = CompressorConfig(name="identity")


def bottom_model(config: RunConfig, party: int, block_shape: tuple[int, ...]) -> nn.Module:
    """Party ``party``'s bottom model, initialised from ``train.seed`` (same in any process)."""
    with torch_seed(derive_seed(config.train.seed, "bottom", party)):
        return build_bottom(config.model.bottom, block_shape)


def head_model(config: RunConfig, widths: Sequence[int], task: Task) -> nn.Module:
    """The server's head for embeddings of ``widths``, initialised from ``train.seed``."""
    with torch_seed(derive_seed(config.train.seed, "head")):
        return build_head(config.model.head, widths, task)


def compressor(config: CompressorConfig, bits: int) -> Compressor:
    """The compressor a link config describes, with ``bits`` bits per component."""
    low, high = (config.low, config.high) if config.range == "fixed" else (None, None)
    if config.name == "identity":
        return Identity()
    if config.name == "scalar":
        return ScalarQuantizer(bits=bits, low=low, high=high)
    if config.name == "lattice":
        return LatticeQuantizer(bits=bits, low=low, high=high)
    if config.name == "topk":
        if config.ratio > 0:
            return TopK(ratio=config.ratio, per_row=config.per_row)
        return TopK(bits=bits, per_row=config.per_row)
    raise ConfigError(f"no compressor named {config.name!r}")


def codec(config: CompressorConfig) -> TensorCodec | None:
    """The codec of one link, or ``None`` for plain float32 tensors (``name = "none"``)."""
    if config.name == "none":
        return None
    use_scores = config.name == "topk" and config.select == "gradient"
    if config.schedule == "constant":
        return CompressorCodec(compressor(config, config.bits), use_scores=use_scores)
    if config.schedule == "steps":
        schedule = StepBits(tuple((int(r), int(b)) for r, b in config.steps))
        bits_at = schedule.bits_at
    else:
        bits_at = DiminishingBits(initial=config.bits, max_bits=_max_bits(config)).bits_at

    def build(bits: int) -> Compressor:
        return compressor(config, bits)

    return CompressorCodec(build, bits_at=bits_at, use_scores=use_scores)


def _max_bits(config: CompressorConfig) -> int:
    limits = {"scalar": ScalarQuantizer.max_bits, "lattice": LatticeQuantizer.max_bits}
    return limits.get(config.name, 32)


def links(config: RunConfig) -> Links:
    """The codecs of every link, as the protocol needs them.

    With shared labels the view always travels as compressed payloads (identity when no
    compressor is set), and the server model uses the embedding compressor unless it has its
    own (the C-VFL authors' choice). Gradients are compressed only with private labels.
    """
    compress = config.compress
    if config.protocol.labels == "private":
        if compress.server_model.name != "none":
            raise ConfigError("compress.server_model applies to protocol.labels = 'shared' only")
        return Links(
            embedding=_sparse_decoder(config, codec(compress.embedding)),
            gradient=codec(compress.gradient),
        )
    if compress.gradient.name != "none":
        raise ConfigError(
            "compress.gradient applies to protocol.labels = 'private' only; with"
            " shared labels no gradient is sent"
        )
    embedding = compress.embedding if compress.embedding.name != "none" else IDENTITY
    server_model = compress.server_model if compress.server_model.name != "none" else embedding
    return Links(
        embedding=_sparse_decoder(config, codec(embedding)), server_model=codec(server_model)
    )


def _value_codec(config: RunConfig, link: TensorCodec | None) -> TensorCodec | None:
    """What encodes the kept values of a sparsified upload: a quantizer, or plain float32."""
    return None if config.compress.embedding.name in ("none", "identity") else link


def _sparse_decoder(config: RunConfig, link: TensorCodec | None) -> TensorCodec | None:
    """With LVFL sparsification, every embedding payload is decoded as a sparse one."""
    if not config.lightweight.sparsifies:
        return link
    return SparsifyingCodec(inner=_value_codec(config, link))


def uplink(config: RunConfig, party: int) -> TensorCodec | None:
    """The codec party ``party`` encodes its embeddings with (its own ``β`` schedule)."""
    embedding = config.compress.embedding
    if config.protocol.labels == "shared" and embedding.name == "none":
        embedding = IDENTITY
    link = codec(embedding)
    if not config.lightweight.sparsifies:
        return link
    beta = Lightweighting.from_config(config.lightweight, party).beta
    return SparsifyingCodec(beta.value_at, inner=_value_codec(config, link))


def learning_rate(config: RunConfig) -> LearningRateSchedule | None:
    """The per-round learning rate, or ``None`` for the optimizer's constant rate."""
    optimizer = config.train.optimizer
    if optimizer.lr_schedule == "constant":
        return None
    return LearningRateSchedule(optimizer.lr, optimizer.lr_schedule)


def local_steps(config: RunConfig) -> LocalSteps:
    """Q and the proximal weight."""
    return LocalSteps(config.protocol.local_steps, config.protocol.proximal_mu)


def mechanism(config: RunConfig) -> PoissonBinomialMechanism:
    """The configured Poisson Binomial Mechanism."""
    privacy = config.privacy
    return PoissonBinomialMechanism(clip=privacy.clip, trials=privacy.trials, beta=privacy.beta)


def secure_aggregation(config: RunConfig) -> bool:
    """Whether counts are masked (``auto`` means on with PBM)."""
    return config.privacy.secure_aggregation != "off"


def party_privacy(config: RunConfig, party: int) -> PartySecureSum | None:
    """A party's PBM stage, or ``None`` without a privacy mechanism."""
    if config.privacy.mechanism != "pbm":
        return None
    seed = derive_seed(config.train.seed, "pbm", party)
    generator = mechanism_generator(seed, secure_rng=config.privacy.secure_rng)
    return PartySecureSum(party, mechanism(config), generator, secure=secure_aggregation(config))


def party_options(
    config: RunConfig,
    party: int,
    *,
    train_labels: torch.Tensor | None = None,
    task: Task | None = None,
    widths: Mapping[int, int] | None = None,
    head: nn.Module | None = None,
) -> PartyOptions:
    """How party ``party`` takes part in the configured protocol.

    With shared labels the party also needs the ``train_labels``, the ``task``, every party's
    embedding ``widths`` and a ``head`` replica (refreshed from each round's broadcast).
    """
    link = links(config)
    options = PartyOptions(
        steps=local_steps(config),
        uplink=uplink(config, party),
        gradient=link.gradient,
        seeds=MessageSeeds(config.train.seed),
        learning_rate=learning_rate(config),
        privacy=party_privacy(config, party),
        lightweight=Lightweighting.from_config(config.lightweight, party),
    )
    if config.protocol.labels == "shared":
        if train_labels is None or task is None or widths is None or head is None:
            raise ConfigError(
                "shared labels: a party needs the labels, the task, the embedding widths and a"
                " replica of the server model"
            )
        assert link.embedding is not None and link.server_model is not None
        options.shared = SharedLabels(
            labels=train_labels,
            task=task,
            head=head,
            widths=dict(widths),
            embeddings=link.embedding,
            server_model=link.server_model,
        )
    return options


def party_from_config(
    config: RunConfig,
    party: int,
    train_block: torch.Tensor,
    test_block: torch.Tensor,
    *,
    train_labels: torch.Tensor | None = None,
    task: Task | None = None,
    num_parties: int = 0,
) -> Party:
    """Party ``party`` as the config describes it, its bottom model built from the config.

    With shared labels the party also needs ``train_labels``, the ``task`` and ``num_parties``
    (all parties send ``model.bottom.embedding_dim`` wide embeddings).
    """
    model = bottom_model(config, party, tuple(train_block.shape[1:]))
    widths = dict.fromkeys(range(1, num_parties + 1), config.model.bottom.embedding_dim)
    head = None
    if config.protocol.labels == "shared" and task is not None and widths:
        head = head_model(config, list(widths.values()), task)
    options = party_options(
        config, party, train_labels=train_labels, task=task, widths=widths or None, head=head
    )
    return Party(
        party,
        train_features=train_block,
        test_features=test_block,
        model=model,
        optimizer=optimizer_factory(config.train.optimizer)(model.parameters()),
        options=options,
    )


def server_from_config(
    config: RunConfig,
    *,
    task: Task,
    train_labels: torch.Tensor,
    test_labels: torch.Tensor,
    embedding_dims: Mapping[int, int],
) -> Server:
    """The server as the config describes it, for parties sending ``embedding_dims``."""
    head = head_model(config, list(embedding_dims.values()), task)
    return Server(
        head=head,
        task=task,
        train_labels=train_labels,
        test_labels=test_labels,
        optimizer=optimizer_factory(config.train.optimizer)(head.parameters()),
        embedding_dims=embedding_dims,
    )


def sampler_from_config(config: RunConfig, num_train: int) -> BatchSampler:
    """The server's batch order."""
    train = config.train
    seed = derive_seed(train.seed, "batches")
    return BatchSampler(
        num_train, train.batch_size, shuffle=train.shuffle, seed=seed, drop_last=train.drop_last
    )


def trainer_from_config(config: RunConfig, server: Server, transport: Transport) -> ServerLoop:
    """The server-side protocol loop over ``transport`` (in-process or network)."""
    sampler = sampler_from_config(config, len(server.labels[SPLIT_TRAIN]))
    return protocol_loop(
        config, server, transport, sampler, eval_batch_size=config.train.eval_batch_size
    )


def protocol_loop(
    config: RunConfig,
    server: Server,
    transport: Transport,
    sampler: BatchSampler,
    *,
    eval_batch_size: int,
) -> ServerLoop:
    """The loop of the configured protocol (its ``protocol``, ``compress`` and ``privacy``)."""
    options = LoopOptions(
        steps=local_steps(config),
        links=links(config),
        seeds=MessageSeeds(config.train.seed),
        learning_rate=learning_rate(config),
    )
    if config.privacy.mechanism == "pbm":
        width = next(iter(server.embedding_dims.values()))
        pbm = mechanism(config)
        secure_sum = ServerSecureSum(
            pbm,
            server.party_ids,
            secure=secure_aggregation(config),
            fraction_bits=config.privacy.eval_fraction_bits,
        )
        return PrivateSumTraining(
            server,
            transport,
            sampler,
            eval_batch_size=eval_batch_size,
            secure_sum=secure_sum,
            event=pbm.event(parties=len(server.party_ids), dimension=width),
            delta=config.privacy.delta,
            options=options,
        )
    loop: type[ServerLoop] = SplitLearning
    if config.protocol.labels == "shared":
        loop = SharedLabelsTraining
    elif config.protocol.schedule == "sequential":
        loop = SequentialSplitLearning
    return loop(server, transport, sampler, eval_batch_size=eval_batch_size, options=options)
