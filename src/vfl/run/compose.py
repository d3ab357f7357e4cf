"""The composition root: the only code that turns a config and models into a run.

``vfl run``, ``vfl.simulate()``, the deployed server and the deployed party all call these
functions, so any protocol option behaves identically whatever builds the run and whatever
transport carries the messages:

- ``build_party``: one party role (its model, optimizer and every message stage: codec,
  noise, sparsification);
- ``build_server`` and ``build_loop``: the label holder and its protocol loop over a transport;
- ``build_session``: a whole run in one process (in-process transport, the active party
  co-located with the server), or the centralized baseline.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from vfl.compress.codec import MessageSeeds
from vfl.config import RunConfig
from vfl.data.vertical import VerticalData
from vfl.errors import ConfigError
from vfl.models.head import CombinedModel
from vfl.protocol.centralized import CentralizedTraining
from vfl.protocol.loop import ServerLoop
from vfl.results.metrics import Task
from vfl.roles.party import Party
from vfl.roles.party_options import PartyOptions
from vfl.roles.server import Server
from vfl.roles.shared import ActiveBlock, SharedLabels
from vfl.run import privacy_stages, stages
from vfl.run.loops import make_loop
from vfl.run.models import ConfigModels, ModelSource, embedding_width
from vfl.run.observe import ObservingTransport, Taps, party_handler
from vfl.run.session import LocalParties, Session
from vfl.transport.base import PartyEndpoint, Transport
from vfl.transport.colocated import ColocatedTransport
from vfl.transport.inproc import InProcTransport
from vfl.wire import SPLIT_TRAIN


@dataclass(frozen=True)
class Blueprint:
    """What to build: the run config, where the models come from, and where the run will live.

    Attributes:
        config: The run config (protocol, stages, training settings).
        models: The models and optimizers (from ``[model]``, or the user's own).
        deployed: Built for a deployment: privacy randomness then comes from the operating
            system, never from ``train.seed`` (a value the server chooses), and ``auto``
            settings take their deployment values (compressed evaluation traffic).
    """

    config: RunConfig
    models: ModelSource
    deployed: bool = False

    def warn_of_risks(self) -> None:
        """Warn (``UserWarning``) of allowed but risky settings before training with them."""
        for advice in stages.risky_settings(self.config):
            warnings.warn(advice, UserWarning, stacklevel=3)

    @classmethod
    def from_config(cls, config: RunConfig, *, deployed: bool = False) -> Blueprint:
        """The run ``config`` describes, models included."""
        return cls(config, ConfigModels(config), deployed)


def build_party(
    blueprint: Blueprint,
    party: int,
    train_block: torch.Tensor,
    test_block: torch.Tensor,
    *,
    task: Task,
    train_labels: torch.Tensor | None = None,
    widths: Mapping[int, int] | None = None,
    model: nn.Module | None = None,
) -> Party:
    """Party ``party`` with its bottom model, optimizer and message stages.

    With shared labels the party also needs the ``train_labels`` and every party's embedding
    ``widths`` (it keeps a replica of the server model to train against). ``model`` is its
    bottom model when already built (else the blueprint's model source builds it).
    """
    config = blueprint.config
    if model is None:
        model = blueprint.models.bottom(party, train_block)
    options = PartyOptions(
        steps=stages.local_steps(config),
        uplink=stages.uplink(config, party),
        gradient=stages.codecs(config).gradient,
        seeds=MessageSeeds(config.train.seed),
        learning_rate=stages.learning_rate(config, len(train_block)),
        privacy=privacy_stages.party_privacy(config, party, deployed=blueprint.deployed),
        lightweight=stages.lightweighting(config, party),
        compress_evaluation=privacy_stages.compress_evaluation(config, deployed=blueprint.deployed),
    )
    if config.protocol.labels == "shared":
        options.shared = _shared_labels(blueprint, task, train_labels, widths)
    return Party(
        party,
        train_features=train_block,
        test_features=test_block,
        model=model,
        optimizer=_trainable(blueprint.models, model, f"party {party}'s bottom model"),
        options=options,
    )


def _shared_labels(
    blueprint: Blueprint,
    task: Task,
    labels: torch.Tensor | None,
    widths: Mapping[int, int] | None,
) -> SharedLabels:
    if labels is None or not widths:
        raise ConfigError(
            "protocol.labels = 'shared': a party needs the training labels and every party's"
            " embedding width"
        )
    codecs = stages.codecs(blueprint.config)
    assert codecs.embedding is not None and codecs.server_model is not None  # shared-label codecs
    ordered = dict(sorted(widths.items()))
    return SharedLabels(
        labels=labels,
        task=task,
        head=blueprint.models.head_replica(list(ordered.values()), task),
        widths=ordered,
        embeddings=codecs.embedding,
        server_model=codecs.server_model,
    )


def build_server(
    blueprint: Blueprint,
    *,
    task: Task,
    train_labels: torch.Tensor,
    test_labels: torch.Tensor,
    widths: Mapping[int, int],
) -> Server:
    """The label holder, its head fusing embeddings of ``widths`` (by party id)."""
    ordered = dict(sorted(widths.items()))
    head = blueprint.models.head(list(ordered.values()), task)
    return Server(
        head=head,
        task=task,
        train_labels=train_labels,
        test_labels=test_labels,
        optimizer=blueprint.models.optimizer(head.parameters()),
        embedding_dims=ordered,
    )


def build_loop(blueprint: Blueprint, server: Server, transport: Transport) -> ServerLoop:
    """The configured protocol's server-side loop over ``transport`` (in-process or network)."""
    config = blueprint.config
    width = next(iter(server.embedding_dims.values()), 0)
    privacy = privacy_stages.server_privacy(config, server.party_ids, width)
    num_train = len(server.labels[SPLIT_TRAIN])
    return make_loop(
        stages.protocol_name(config),
        server,
        transport,
        stages.sampler(config, num_train),
        eval_batch_size=config.train.eval_batch_size,
        options=stages.loop_options(config, num_train, privacy, deployed=blueprint.deployed),
    )


def local_transport(
    config: RunConfig,
    parties: Sequence[Party],
    taps: Taps | None = None,
    widths: Mapping[int, int] | None = None,
) -> Transport:
    """The in-process transport, with the active party (if any) in the server's process.

    A party ``taps`` names is reached through an observer of its own handler; with a server
    listener the transport is wrapped in an ``ObservingTransport`` (``build_session`` binds it).
    """
    taps = taps or Taps()
    active = config.protocol.active_party
    remote = {
        p.party_id: PartyEndpoint(p.party_id, party_handler(p, taps, widths or {}))
        for p in parties
        if p.party_id != active
    }
    transport: Transport = InProcTransport(remote)
    if active:
        transport = ColocatedTransport(transport, {active: parties[active - 1].handle})
    return transport if taps.server is None else ObservingTransport(transport, taps.server)


def build_session(
    blueprint: Blueprint | RunConfig, data: VerticalData, *, taps: Taps | None = None
) -> Session[LocalParties]:
    """A whole run in this process: every party, the server, the loop and the transport.

    A bare ``RunConfig`` stands for ``Blueprint.from_config(config)``. ``taps`` observe the
    roles they name (``vfl.run.observe``; the active party cannot be observed).
    """
    if isinstance(blueprint, RunConfig):
        blueprint = Blueprint.from_config(blueprint)
    blueprint.warn_of_risks()
    config = blueprint.config
    if config.protocol.mode == "centralized":
        centralized = _centralized(blueprint, data)
        centralized.config = config
        return centralized
    _check_parties(config, data.num_parties)
    bottoms = {
        party: blueprint.models.bottom(party, block)
        for party, block in enumerate(data.train_blocks, start=1)
    }
    widths = {
        party: embedding_width(model, data.train_blocks[party - 1])
        for party, model in bottoms.items()
    }
    parties = [
        build_party(
            blueprint,
            party,
            train,
            test,
            task=data.task,
            train_labels=data.train_labels,
            widths=widths,
            model=bottoms[party],
        )
        for party, (train, test) in enumerate(
            zip(data.train_blocks, data.test_blocks, strict=True), start=1
        )
    ]
    server = build_server(
        blueprint,
        task=data.task,
        train_labels=data.train_labels,
        test_labels=data.test_labels,
        widths=widths,
    )
    if config.protocol.active_party:
        attach_active_party(parties[config.protocol.active_party - 1], server)
    transport = local_transport(config, parties, taps, widths)
    loop = build_loop(blueprint, server, transport)
    if isinstance(transport, ObservingTransport):
        transport.bind(loop)
    session = Session(loop, LocalParties(parties))
    session.config = config
    return session


def attach_active_party(party: Party, server: Server) -> None:
    """Give the active party (FedBCD's party K, in the server's process) its share of the block.

    Its exact local steps train its bottom together with the server's own head, so it holds the
    very same head module, its optimizer and the labels.
    """
    party.options.active = ActiveBlock(
        head=server.head,
        head_optimizer=server.optimizer,
        labels=server.labels[SPLIT_TRAIN],
        task=server.task,
        position=server.party_ids.index(party.party_id),
    )


def _centralized(blueprint: Blueprint, data: VerticalData) -> Session[LocalParties]:
    """The centralized baseline: bottoms and head as one model, one optimizer, no messages."""
    models = blueprint.models
    bottoms = [models.bottom(party, x) for party, x in enumerate(data.train_blocks, start=1)]
    widths = [embedding_width(b, x) for b, x in zip(bottoms, data.train_blocks, strict=True)]
    combined = CombinedModel(bottoms, models.head(widths, data.task))
    trainer = CentralizedTraining(
        model=combined,
        optimizer=_trainable(models, combined, "the combined model"),
        task=data.task,
        train_blocks=data.train_blocks,
        test_blocks=data.test_blocks,
        train_labels=data.train_labels,
        test_labels=data.test_labels,
        sampler=stages.sampler(blueprint.config, len(data.train_labels)),
        eval_batch_size=blueprint.config.train.eval_batch_size,
        learning_rate=stages.learning_rate(blueprint.config, len(data.train_labels)),
    )
    return Session(trainer, LocalParties())


def _trainable(models: ModelSource, module: nn.Module, what: str) -> torch.optim.Optimizer:
    """The optimizer of a module that must have parameters to train."""
    optimizer = models.optimizer(module.parameters())
    if optimizer is None:
        raise ConfigError(f"{what} has no trainable parameters")
    return optimizer


def _check_parties(config: RunConfig, num_parties: int) -> None:
    """Every party the config's settings name must be one of the data's parties."""
    named = {"protocol.active_party": [config.protocol.active_party]}
    named["lightweight.party"] = [entry.party for entry in config.lightweight.party]
    for key, parties in named.items():
        outside = [p for p in parties if p > num_parties]
        if outside:
            raise ConfigError(
                f"{key}: {outside[0]} is not a party of the data; valid: 1..{num_parties}"
            )
