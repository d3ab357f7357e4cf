"""Model bundles: each role's trained part, saved without pickle, tied to its run by a fingerprint.

A run exports one bundle per role into ``RUN_DIR/bundle/``::

    server/    manifest.json  config.toml  weights.safetensors
    party-<k>/ manifest.json  config.toml  weights.safetensors  preprocessing.json

``weights.safetensors`` holds the role's model (safetensors: tensors and nothing else; loading it
runs no code). ``config.toml`` is the resolved run config the role was built from (a party's
without the label holder's data paths), so the architecture and every stage inference must
repeat (PBM and secure sums, compressed evaluation traffic) are rebuilt by the same composition
root. A party's ``preprocessing.json`` is the fitted encoding of its own raw columns (or, for
images, the region of each image it holds); its ``manifest.json`` also records the pruned widths
of an LVFL model. Every file carries the run's **fingerprint**, a hash of the config every
role shares and of the partition (the manifest and ``preprocessing.json`` a ``fingerprint``
entry, ``config.toml`` a ``fingerprint`` key, the weights their safetensors metadata): a
loaded bundle whose files disagree with its manifest is refused naming the file, and parts of
different runs are never combined. (Bundles written before the config and preprocessing carried
it are checked by their weights and manifest.)

A bundle loads on the CPU, whatever ``train.device`` the run trained on (the config it returns
says ``cpu``): a run trained on CUDA predicts on a machine without it; ``on_device`` moves one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from vfl.config import DataConfig, RunConfig
from vfl.config.io import to_toml
from vfl.data.encoding import TableEncoder
from vfl.data.partition import Partition, PartyView
from vfl.errors import ConfigError, DataError
from vfl.models.device import DeviceName
from vfl.protocol.loop import ServerLoop
from vfl.prune.progressive import ProgressivePruner
from vfl.results.metrics import Task
from vfl.roles.party import Party
from vfl.roles.server import Server
from vfl.run.bundle_files import (
    FINGERPRINT,
    FORMAT,
    PREPROCESSING,
    load_weights,
    read_preprocessing,
    read_role,
    write_role,
)
from vfl.run.models import ConfigModels
from vfl.run.session import LocalParties, Session

BUNDLE = "bundle"
SERVER = "server"
MODULES_CONFIG, MODULES_GIVEN = "config", "given"
"""How a bundle's models are rebuilt: from its config, or the user passes their own modules."""


def party_folder(party: int) -> str:
    """The folder name of party ``party``'s bundle."""
    return f"party-{party}"


def shared_config(config: RunConfig) -> RunConfig:
    """The part of a run config every role sees: without the data source and the output."""
    return replace(config, data=DataConfig(), output=replace(config.output, dir="", name=""))


def on_device(config: RunConfig, device: DeviceName) -> RunConfig:
    """``config`` with its models on ``device`` (``train.device``), nothing else changed."""
    return replace(config, train=replace(config.train, device=device))


def fingerprint(config: RunConfig, identity: str) -> str:
    """A hash of the config every role shares and the run's ``identity`` (partition, alignment)."""
    digest = hashlib.sha256(to_toml(shared_config(config)).encode())
    digest.update(b"\0" + identity.encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class PartyBundle:
    """One party's trained part.

    Attributes:
        party: The party id.
        fingerprint: The run's fingerprint.
        config: The run config the party was built from.
        model: Its bottom model, trained weights loaded.
        preprocessing: How it turns its raw rows into features: ``{"kind": "table", "encoder":
            {...}}`` (``TableEncoder.as_dict``) or ``{"kind": "image", "region": [r0, r1, c0,
            c1]}``.
        block_shape: The shape of one row of its features (``(D,)``, or ``(C, H, W)``).
    """

    party: int
    fingerprint: str
    config: RunConfig
    model: nn.Module
    preprocessing: dict[str, Any]
    block_shape: tuple[int, ...] = ()

    @property
    def encoder(self) -> TableEncoder | None:
        """The fitted encoding of the party's raw columns (tables only)."""
        if self.preprocessing.get("kind") != "table":
            return None
        return TableEncoder.from_dict(self.preprocessing["encoder"])


@dataclass(frozen=True)
class ServerBundle:
    """The label holder's trained part.

    Attributes:
        fingerprint: The run's fingerprint.
        config: The run config.
        head: The head, trained weights loaded.
        classes: The class names, in class-index order.
        widths: Every party's embedding width, by party id.
    """

    fingerprint: str
    config: RunConfig
    head: nn.Module
    classes: tuple[str, ...]
    widths: dict[int, int]


def export_party(
    folder: Path,
    party: Party,
    config: RunConfig,
    *,
    run_fingerprint: str,
    preprocessing: dict[str, Any],
    modules: str = MODULES_CONFIG,
) -> Path:
    """Write ``party``'s bundle into ``folder / party-<id>``; returns that folder.

    ``modules``: ``"config"`` (the model is rebuilt from the config at load) or ``"given"``
    (the user's own module: the loader passes one of the same architecture).
    """
    target = folder / party_folder(party.party_id)
    lightweight = party.options.lightweight
    pruner = None if lightweight is None or lightweight.pruner is None else lightweight.pruner
    manifest = {
        "format": FORMAT,
        "role": "party",
        "party": party.party_id,
        "fingerprint": run_fingerprint,
        "block_shape": list(party.features[0].shape[1:]),
        "pruner": None if pruner is None else pruner.state_dict(),
        "modules": modules,
    }
    write_role(target, manifest, shared_config(config), party.model)
    stamped = {FINGERPRINT: run_fingerprint, **preprocessing}
    (target / PREPROCESSING).write_text(json.dumps(stamped, indent=2) + "\n")
    return target


def export_server(
    folder: Path,
    server: Server,
    config: RunConfig,
    *,
    run_fingerprint: str,
    classes: tuple[str, ...],
    modules: str = MODULES_CONFIG,
) -> Path:
    """Write the server's bundle into ``folder / server``; returns that folder."""
    target = folder / SERVER
    manifest = {
        "format": FORMAT,
        "role": "server",
        "fingerprint": run_fingerprint,
        "classes": list(classes),
        "widths": {str(p): w for p, w in server.embedding_dims.items()},
        "modules": modules,
    }
    write_role(target, manifest, config, server.head)
    return target


def load_party(folder: Path, module: nn.Module | None = None) -> PartyBundle:
    """A party bundle, its bottom model rebuilt from its config and its weights loaded.

    Args:
        folder: The bundle's folder.
        module: For a bundle of the user's own modules (``vfl.export``): a module of the same
            architecture, into which the weights are loaded.

    Raises:
        DataError: naming the file that is missing or not what a bundle holds, or a bundle of
            the user's own modules loaded without one.
    """
    manifest, config = read_role(folder, "party")
    config = on_device(config, "cpu")
    shape = tuple(int(size) for size in manifest["block_shape"])
    party = int(manifest["party"])
    if _given(manifest, folder, module, f"party {party}'s bottom"):
        assert module is not None
        model = module
    else:
        model = ConfigModels(config).bottom(party, torch.zeros((1, *shape)))
    if manifest.get("pruner") is not None:
        pruner = ProgressivePruner.for_model(model)
        pruner.load_state_dict(manifest["pruner"])
        model = pruner.restore(model).model
    load_weights(folder, model, str(manifest[FINGERPRINT]))
    preprocessing = read_preprocessing(folder, str(manifest[FINGERPRINT]))
    return PartyBundle(
        int(manifest["party"]), str(manifest[FINGERPRINT]), config, model, preprocessing, shape
    )


def load_server(folder: Path, module: nn.Module | None = None) -> ServerBundle:
    """The server bundle, its head rebuilt from its config and its weights loaded.

    Args:
        folder: The bundle's folder.
        module: For a bundle of the user's own modules (``vfl.export``): a head of the same
            architecture, into which the weights are loaded.

    Raises:
        DataError: naming the file that is missing or not what a bundle holds, or a bundle of
            the user's own modules loaded without one.
    """
    manifest, config = read_role(folder, "server")
    config = on_device(config, "cpu")
    classes = tuple(str(c) for c in manifest["classes"])
    widths = {int(p): int(w) for p, w in manifest["widths"].items()}
    if _given(manifest, folder, module, "the head"):
        assert module is not None
        head = module
    else:
        head = ConfigModels(config).head(
            list(dict(sorted(widths.items())).values()), Task(len(classes))
        )
    load_weights(folder, head, str(manifest[FINGERPRINT]))
    return ServerBundle(str(manifest[FINGERPRINT]), config, head, classes, widths)


def _given(manifest: dict[str, Any], folder: Path, module: nn.Module | None, what: str) -> bool:
    """Whether the bundle holds the user's own module (then ``module`` is required)."""
    if manifest.get("modules", MODULES_CONFIG) != MODULES_GIVEN:
        return False
    if module is None:
        raise DataError(
            f"{folder} holds the weights of your own module ({what}, exported by vfl.export):"
            " pass modules of the same architecture, vfl.load_model(RUN_DIR, bottoms=[...],"
            " head=...)"
        )
    return True


def preprocessing_of(view: PartyView, encoder: TableEncoder | None) -> dict[str, Any]:
    """What a party's bundle records of how its features are made from raw rows."""
    if encoder is not None:
        return {"kind": "table", "encoder": encoder.select(_sources(view, encoder)).as_dict()}
    return {"kind": "image", "region": list(view.region)}


def partition_identity(partition: Partition) -> str:
    """The identity of a simulated run's data split, for its fingerprint."""
    return partition.to_json()


def check_same_run(fingerprints: dict[str, str]) -> None:
    """Raise unless every bundle comes from the same run.

    Raises:
        ConfigError: naming the bundles whose fingerprints differ.
    """
    if len(set(fingerprints.values())) > 1:
        shown = ", ".join(f"{name} {value[:12]}" for name, value in sorted(fingerprints.items()))
        raise ConfigError(
            f"these bundles come from different runs (fingerprints {shown}); export every role"
            " from one run"
        )


def _sources(view: PartyView, encoder: TableEncoder) -> list[str]:
    names = encoder.names
    chosen = [encoder.sources[names.index(name)] for name in view.column_names]
    return list(dict.fromkeys(chosen))


def export_run(
    folder: Path,
    session: Session[LocalParties],
    config: RunConfig,
    *,
    partition: Partition,
    encoder: TableEncoder | None,
    classes: tuple[str, ...],
) -> Path:
    """Export every role of a simulated run into ``folder``; returns it.

    Raises:
        ConfigError: for the centralized baseline, which has no roles to export.
    """
    loop = session.trainer
    if not isinstance(loop, ServerLoop):
        raise ConfigError("the centralized baseline has no roles: there is nothing to export")
    run_fingerprint = fingerprint(config, partition_identity(partition))
    for party, view in zip(session.parties, partition.views, strict=True):
        export_party(
            folder,
            party,
            config,
            run_fingerprint=run_fingerprint,
            preprocessing=preprocessing_of(view, encoder),
        )
    export_server(folder, loop.server, config, run_fingerprint=run_fingerprint, classes=classes)
    return folder
