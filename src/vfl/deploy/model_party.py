"""``vfl party --predict`` and ``--serve``: a party answering with its model bundle, not training.

The party loads its bundle first (safetensors weights: a pickle is refused before anything
dials) and presents the bundle's run fingerprint when it connects: a server whose model comes
from another run refuses it at once. Then it builds its role from the bundle with the
composition root, exactly as training built it, and answers evaluation requests through it, so
embeddings travel as in evaluation (securely summed with PBM, compressed where the run
compresses evaluation traffic).

- **Batch** (``--predict``): the party encodes its whole new table when it starts (a bad value
  stops it, naming the ID and the column), aligns its IDs with the server's by PSI, and embeds
  the aligned rows. It never learns an ID it does not hold.
- **Online** (``--serve``): for each ``LookupRequest`` it looks the IDs up in its current table
  (``vfl.deploy.rows``), keeps their encoded rows for the round, and says which IDs it cannot
  score and why; the next ``EvalRequest`` of the round embeds them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import torch

from vfl.deploy.alignment import Alignment
from vfl.deploy.boost_model_party import (
    BoostModelRuntime,
    holder_encoder,
    is_boost_bundle,
    load_holder,
)
from vfl.deploy.dispatch import answer
from vfl.deploy.messages import LookupReply, LookupRequest, ModelSetupRequest, SetupReply
from vfl.deploy.party import party_link, prepare_party
from vfl.deploy.party_config import PartyConfig
from vfl.deploy.psi_party import PsiResponder
from vfl.deploy.rows import Looked, TableRows, party_encoder
from vfl.errors import ConfigError, DataError, ProtocolError, WireError
from vfl.models.device import resolve_device
from vfl.results.metrics import Task
from vfl.roles.party import Party
from vfl.run import bundles
from vfl.run.compose import Blueprint, build_party
from vfl.run.models import embedding_width
from vfl.transport.security import PartyTls
from vfl.wire import SPLIT_TEST, Message

log = logging.getLogger(__name__)


class ModelRuntime:
    """Answers a predicting server with the party's bundle and rows.

    Args:
        bundle: The party's model bundle.
        rows: Its table of rows to score.
        batch: Predict for the whole table, aligned by PSI (else look rows up per request).
        device: Where the bottom model embeds (``PartyConfig.device``; empty: the CPU, where a
            bundle loads whatever device its run trained on).
    """

    def __init__(
        self,
        bundle: bundles.PartyBundle,
        rows: TableRows,
        *,
        batch: bool,
        device: Literal["", "auto", "cpu", "cuda", "mps"] = "",
    ) -> None:
        if device:
            bundle.model.to(resolve_device(device, key="PARTY.toml device"))
            bundle = replace(bundle, config=bundles.on_device(bundle.config, device))
        self.bundle = bundle
        self.party_id = bundle.party
        self.rows = rows
        self.party: Party | None = None
        self._handlers: dict[type[Message], Callable[[Any], Message]] = {
            ModelSetupRequest: self._setup
        }
        self._alignment: Alignment | None = None
        self._block = torch.zeros((1, *bundle.block_shape))
        if batch:
            ids, self._block = self._whole_table()
            psi = PsiResponder(self.party_id, {SPLIT_TEST: ids}, self._aligned)
            self._handlers.update(psi.handlers())
        else:
            self._handlers[LookupRequest] = self._lookup

    def handle(self, message: Message) -> Message:
        """Answer one request."""
        return answer(message, self._handlers, self.party, self.party_id)

    def _whole_table(self) -> tuple[Any, torch.Tensor]:
        ids, _ = self.rows.all_rows()
        looked = self.rows.lookup([str(value) for value in ids])
        if looked.failed:
            position, reason = next(iter(looked.failed.items()))
            raise DataError(
                f"{reason} (ID {str(ids[position])!r}; {len(looked.failed)} of {len(ids)} rows"
                " cannot be scored): fix the table"
            )
        for note in sorted(set(looked.notes.values())):
            count = sum(1 for n in looked.notes.values() if n == note)
            log.warning("%s (%d rows)", note, count)
        return ids, self._shaped(looked)

    def _aligned(self, alignment: Alignment) -> None:
        self._alignment = alignment

    def _setup(self, request: ModelSetupRequest) -> SetupReply:
        if request.fingerprint != self.bundle.fingerprint:
            raise ProtocolError(
                f"party {self.party_id}'s model bundle comes from another run than the server's"
                " model"
            )
        block = self._block
        if request.alignment:
            if self._alignment is None or self._alignment.id != request.alignment:
                raise ProtocolError(f"party {self.party_id}: no alignment {request.alignment!r}")
            block = block[torch.from_numpy(self._alignment.rows[SPLIT_TEST])]
        widths = {p: int(w) for p, w in enumerate(request.widths.tolist(), start=1)}
        config = self.bundle.config
        shared = config.protocol.labels == "shared"
        self.party = build_party(
            Blueprint.from_config(config, deployed=True),
            self.party_id,
            block,
            block,
            task=Task(request.num_classes),
            train_labels=torch.zeros(len(block), dtype=torch.int64) if shared else None,
            widths=widths if shared else None,
            model=self.bundle.model,
        )
        width = embedding_width(self.bundle.model, block)
        log.info(
            "set up from its model bundle: %d rows to predict",
            len(block) if request.alignment else 0,
        )
        return SetupReply(
            round=request.round, width=width, num_train=len(block), num_test=len(block)
        )

    def _lookup(self, request: LookupRequest) -> LookupReply:
        if self.party is None:
            raise ProtocolError(f"party {self.party_id}: lookup before setup")
        try:
            ids = [raw.decode() for raw in request.ids]
        except UnicodeDecodeError:
            raise WireError(f"party {self.party_id}: an ID of the lookup is not UTF-8") from None
        looked = self.rows.lookup(ids)
        self.party.use_rows(SPLIT_TEST, self._shaped(looked))
        failed, noted = sorted(looked.failed), sorted(looked.notes)
        return LookupReply(
            round=request.round,
            failed=torch.tensor(failed, dtype=torch.int64),
            reasons=tuple(looked.failed[i].encode() for i in failed),
            noted=torch.tensor(noted, dtype=torch.int64),
            notes=tuple(looked.notes[i].encode() for i in noted),
        )

    def _shaped(self, looked: Looked) -> torch.Tensor:
        return looked.block.reshape(len(looked.block), *self.bundle.block_shape)


def bundle_folder(config: PartyConfig, model: str = "") -> Path:
    """Where the party's bundle is: ``model``, else ``config.model``, else where training put it."""
    folder = Path(model or config.model or Path(config.state_dir) / bundles.BUNDLE)
    if (folder / bundles.party_folder(config.party_id)).is_dir():
        folder = folder / bundles.party_folder(config.party_id)
    return folder


def load_bundle(config: PartyConfig, model: str = "") -> bundles.PartyBundle:
    """The party's model bundle: ``model``, else ``config.model``, else where training put it.

    Raises:
        DataError: naming a bundle file that is missing or not what it should be (a pickle).
        ConfigError: if the bundle is another party's.
    """
    folder = bundle_folder(config, model)
    bundle = bundles.load_party(folder)
    if bundle.party != config.party_id:
        raise ConfigError(
            f"{folder} holds party {bundle.party}'s model bundle; this is party {config.party_id}"
        )
    return bundle


def run_model_party(
    config: PartyConfig, *, serve: bool, data: str = "", model: str = "", server: str = ""
) -> None:
    """Answer a predicting server (``serve``: online scoring) until it shuts the party down.

    Raises:
        ConfigError, DataError: on bad configuration, credentials, bundle or table.
        ProtocolError: if the server refuses the party or stays unreachable.
    """
    tls, token = prepare_party(config, server)
    table = data or (config.data.serve if serve else config.data.predict)
    if not table:
        key = "data.serve" if serve else "data.predict"
        raise ConfigError(
            f"name the party's table of rows to score: --data, or {key} in PARTY.toml"
        )
    folder = bundle_folder(config, model)
    if is_boost_bundle(folder):
        _serve_boost(config, folder, Path(table), serve=serve, tls=tls, token=token, server=server)
        return
    bundle = load_bundle(config, model)
    rows = TableRows(
        config.party_id,
        Path(table),
        id_column=config.data.id_column,
        encoder=party_encoder(bundle),
        sqlite_table=config.data.sqlite_table,
    )
    runtime = ModelRuntime(bundle, rows, batch=not serve, device=config.device)
    link = party_link(
        config, runtime.handle, tls=tls, token=token, server=server, model=bundle.fingerprint
    )
    link.serve()
    log.info("party %d: the server is done with it", config.party_id)


def _serve_boost(
    config: PartyConfig,
    folder: Path,
    table: Path,
    *,
    serve: bool,
    tls: PartyTls,
    token: str,
    server: str,
) -> None:
    """``run_model_party`` with a SecureBoost holder's bundle."""
    bundle = load_holder(folder, config.party_id)
    rows = TableRows(
        config.party_id,
        table,
        id_column=config.data.id_column,
        encoder=holder_encoder(bundle, folder),
        sqlite_table=config.data.sqlite_table,
    )
    runtime = BoostModelRuntime(bundle, rows, batch=not serve)
    link = party_link(
        config, runtime.handle, tls=tls, token=token, server=server, model=bundle.fingerprint
    )
    link.serve()
    log.info("party %d: the server is done with it", config.party_id)
