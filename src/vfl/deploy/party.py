"""``vfl party``: one organisation's process. It aligns, builds its role, trains, checkpoints.

The process dials the server and then only answers: PSI steps with its own IDs, a setup request
(the run config as TOML) from which it builds its ``Party`` with the composition root (``vfl.run``)
exactly as the simulator does, the protocol's training messages, and checkpoint requests after
every epoch. Its data never leaves the process; its IDs leave only blinded. For a SecureBoost
run (``protocol.name = "secureboost"``) the set-up is a ``BoostSetupRequest`` instead, after
which the party answers as a passive holder of its aligned columns (``vfl.deploy.boost_party``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import tomllib
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from vfl.config import RunConfig
from vfl.config.io import from_mapping
from vfl.config.mechanisms import draws_with_a_sampler
from vfl.data.encoding import TableEncoder
from vfl.deploy.audit import audited
from vfl.deploy.boost_party import BoostAnswering
from vfl.deploy.data import HolderSplit, fit_features, load_party_tables
from vfl.deploy.dispatch import answer
from vfl.deploy.messages import (
    CheckpointRequest,
    ControlAck,
    ExportRequest,
    SetupReply,
    SetupRequest,
)
from vfl.deploy.party_config import PartyConfig, PartyPrivacyConfig, check_address
from vfl.deploy.party_privacy import PartyReleases, log_spent
from vfl.deploy.psi_party import PsiResponder
from vfl.deploy.run_folder import WIRE
from vfl.deploy.state import SETTINGS, PartyState, check_party_unchanged, party_settings
from vfl.deploy.tls import party_tls, read_token
from vfl.errors import ProtocolError
from vfl.models.device import resolve_device
from vfl.results.metrics import Task
from vfl.roles.party import Party
from vfl.run.bundles import BUNDLE, export_party, party_folder
from vfl.run.compose import Blueprint, build_party
from vfl.run.deployment import PartyNetwork, build_party_link
from vfl.run.models import ConfigModels, embedding_width
from vfl.run.stages import use_threads
from vfl.seeding import derive_seed
from vfl.transport.grpc_party import PartyLink
from vfl.transport.link import add_snapshots
from vfl.transport.security import PartyTls
from vfl.wire import SPLIT_TRAIN, Message

log = logging.getLogger(__name__)


class PartyRuntime:
    """Answers the server: control messages here, training messages by the built role.

    Args:
        party_id: This party's id.
        tables: The party's train and test tables (IDs and feature columns).
        state: Its state directory.
        categorical: Columns to one-hot encode (empty: inferred).
        device: This party's own ``train.device`` (empty: the run's).
        privacy: Its own privacy budget for VFL-PBM runs.
        rng: Draws the secret order of its PSI lists (fresh entropy by default).
        settings: Its PARTY.toml values that a resume may not change
            (``vfl.deploy.state.party_settings``), kept in every checkpoint.
    """

    def __init__(
        self,
        party_id: int,
        tables: Mapping[int, HolderSplit],
        state: PartyState,
        *,
        categorical: Sequence[str] = (),
        device: Literal["", "auto", "cpu", "cuda", "mps"] = "",
        privacy: PartyPrivacyConfig | None = None,
        rng: np.random.Generator | None = None,
        settings: str = "",
    ) -> None:
        self.party_id = party_id
        self.settings = settings
        self.device = device
        self.releases = PartyReleases(
            party_id,
            privacy or PartyPrivacyConfig(),
            state.directory,
            tables[SPLIT_TRAIN].ids,
        )
        self.tables = dict(tables)
        self.state = state
        self.categorical = tuple(categorical)
        self.party: Party | None = None
        self.config: RunConfig | None = None
        self.encoder: TableEncoder | None = None
        ids = {split: table.ids for split, table in self.tables.items()}
        psi = PsiResponder(party_id, ids, state.save_alignment, rng=rng)
        self.boost = BoostAnswering(
            party_id,
            self.tables,
            state.load_alignment,
            load_checkpoint=state.load_checkpoint,
            categorical=categorical,
        )
        self._handlers: dict[type[Message], Callable[[Any], Message]] = {
            **psi.handlers(),
            **self.boost.handlers(),
            SetupRequest: self._setup,
            CheckpointRequest: self._checkpoint,
            ExportRequest: self._export,
        }

    def handle(self, message: Message) -> Message:
        """Answer one request."""
        return answer(message, self._handlers, self.party, self.party_id)

    def _on_own_device(self, config: RunConfig) -> RunConfig:
        """The run's config with this party's ``device`` (the shared config stays as sent)."""
        if not self.device:
            return config
        return dataclasses.replace(
            config, train=dataclasses.replace(config.train, device=self.device)
        )

    def _setup(self, request: SetupRequest) -> SetupReply:
        config = from_mapping(RunConfig, tomllib.loads(request.config))
        if config.privacy.randomness == "seeded":  # the server chose the seed: never accept it
            raise ProtocolError(
                f"party {self.party_id} refuses the run: privacy.randomness = 'seeded' would derive"
                " its noise from train.seed, a value the server chose"
            )
        self.releases.check_run(config)
        if draws_with_a_sampler(config.privacy.mechanism) and config.privacy.sampler != "chacha":
            raise ProtocolError(
                f"party {self.party_id} refuses the run: privacy.sampler ="
                f" {config.privacy.sampler!r} is not a cryptographic generator; a deployment"
                " draws its noise with 'chacha'"
            )
        alignment = self.state.load_alignment(request.alignment)
        train = self.tables[0].take(alignment.rows[0])
        test = self.tables[1].take(alignment.rows[1])
        train_block, test_block, encoder = fit_features(train, test, categorical=self.categorical)
        if request.restore_round < 0:  # modules may draw from the global RNG (dropout)
            torch.manual_seed(derive_seed(config.train.seed, "torch-global", self.party_id))
        shared = config.protocol.labels == "shared"
        blueprint = Blueprint.from_config(self._on_own_device(config), deployed=True)
        party = build_party(
            blueprint,
            self.party_id,
            train_block,
            test_block,
            task=Task(request.num_classes),
            train_labels=request.labels if shared else None,
            widths=ConfigModels(config).declared_widths(request.num_parties) if shared else None,
        )
        if request.restore_round >= 0:
            saved = self.state.load_checkpoint(request.restore_round)
            party.load_state_dict(saved["role"])
            torch.set_rng_state(saved["torch_rng"])
        self.releases.attach(party, alignment)
        self.party, self.config, self.encoder = party, config, encoder
        how = "fresh" if request.restore_round < 0 else f"restored at round {request.restore_round}"
        log.info("set up (%s): %d train and %d test rows", how, len(train_block), len(test_block))
        return SetupReply(
            round=request.round,
            width=embedding_width(party.model, train_block),
            num_train=len(train_block),
            num_test=len(test_block),
        )

    def _checkpoint(self, request: CheckpointRequest) -> ControlAck:
        if self.boost.role is not None:  # SecureBoost: after each tree, its split rules
            boost = self.boost.checkpoint()
            if self.settings:
                boost[SETTINGS] = self.settings
            self.state.save_checkpoint(request.round, boost)
            return ControlAck(round=request.round)
        if self.party is None:
            raise ProtocolError(f"party {self.party_id}: checkpoint requested before setup")
        state = {"role": self.party.state_dict(), "torch_rng": torch.get_rng_state()}
        if self.settings:
            state[SETTINGS] = self.settings
        self.state.save_checkpoint(request.round, state)
        log_spent(self.party)
        return ControlAck(round=request.round)

    def _export(self, request: ExportRequest) -> ControlAck:
        if self.boost.role is not None:
            folder = self.state.directory / BUNDLE / party_folder(self.party_id)
            self.boost.export(folder, request.fingerprint)
            log.info("exported this party's SecureBoost bundle to %s", folder)
            return ControlAck(round=request.round)
        if self.party is None or self.config is None or self.encoder is None:
            raise ProtocolError(f"party {self.party_id}: bundle export requested before setup")
        folder = export_party(
            self.state.directory / BUNDLE,
            self.party,
            self.config,
            run_fingerprint=request.fingerprint,
            preprocessing={"kind": "table", "encoder": self.encoder.as_dict()},
        )
        log.info("exported this party's model bundle to %s", folder)
        return ControlAck(round=request.round)


def prepare_party(config: PartyConfig, server: str) -> tuple[PartyTls, str]:
    """What a party process checks before it reads any data; its TLS material and token.

    Checks ``--server`` and the party's ``device``, reads its TLS files and token, and sets
    torch's threads.

    Raises:
        ConfigError: naming the bad address, device or file.
    """
    if server:
        check_address(server, "--server")
    if config.device:  # refuse a missing accelerator before any file is read
        resolve_device(config.device, key="PARTY.toml device")
    tls = party_tls(config.tls)
    token = read_token(config.token_file) if config.token_file else ""
    use_threads(config.threads)
    return tls, token


def party_link(
    config: PartyConfig,
    answer: Callable[[Message], Message],
    *,
    tls: PartyTls,
    token: str,
    server: str = "",
    model: str = "",
) -> PartyLink:
    """The party's stream to the server, answering with ``answer`` (audited if configured)."""
    network = PartyNetwork(
        config.party_id,
        address=server or config.server,
        tls=tls,
        token=token,
        give_up_s=config.give_up_s,
        keepalive_s=config.keepalive_s,
    )
    audit_log = Path(config.audit_log) if config.audit_log else None
    wrap = None if audit_log is None else partial(audited, path=audit_log)
    return build_party_link(network, answer, model=model, wrap=wrap)


def run_party(
    config: PartyConfig, *, resume: bool = False, server: str = "", source: str = "PARTY.toml"
) -> dict[str, Any]:
    """Run one party until the server shuts the run down; returns what it kept.

    Args:
        config: The party's PARTY.toml.
        resume: Continue with the state directory of an earlier run of this party.
        server: Dial this ``host:port`` instead of ``config.server``.
        source: Where ``config`` was read, for the refusal of a resume that changed it.

    Raises:
        ConfigError, DataError: on bad configuration, credentials or data, or (with
            ``resume``) a PARTY.toml whose ``state.FIXED_KEYS`` differ from the checkpoints'.
        ProtocolError: if the server refuses the party or stays unreachable.
    """
    tls, token = prepare_party(config, server)
    tables = load_party_tables(config.data)
    state = PartyState(Path(config.state_dir), resume=resume)
    settings = party_settings(config)
    if resume:
        check_party_unchanged(state, settings, source)
    runtime = PartyRuntime(
        config.party_id,
        tables,
        state,
        categorical=config.data.categorical,
        device=config.device,
        privacy=config.privacy,
        settings=settings,
    )
    runtime.releases.verify()
    wire_file = state.directory / WIRE
    earlier = json.loads(wire_file.read_text()) if resume and wire_file.is_file() else {}
    link = party_link(config, runtime.handle, tls=tls, token=token, server=server)
    try:
        link.serve()
    finally:  # summed over the party's processes of the run
        wire = add_snapshots(earlier, link.wire.snapshot())
        wire_file.write_text(json.dumps(wire, indent=2))
    log.info("party %d: the run is over", config.party_id)
    bundle = state.directory / BUNDLE / f"party-{config.party_id}"
    return {
        "party": config.party_id,
        "state_dir": str(state.directory),
        "checkpoint_rounds": state.checkpoint_rounds(),
        "bundle": str(bundle) if bundle.is_dir() else None,
    }
