"""The files of one role's bundle, each tied to its run by the run's fingerprint.

``manifest.json`` names the run's fingerprint; ``config.toml`` carries it as a ``fingerprint``
key before the config's tables, ``preprocessing.json`` as a ``fingerprint`` entry, and
``weights.safetensors`` in its metadata. Reading a bundle checks each file against the manifest
and refuses one from another run, naming it (``vfl.run.bundles`` says what the files hold).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from torch import nn

from vfl.config import RunConfig
from vfl.config.io import to_toml
from vfl.config.saved import saved_config
from vfl.errors import DataError

FORMAT = "vfl-bundle/1"
MANIFEST = "manifest.json"
CONFIG = "config.toml"
WEIGHTS = "weights.safetensors"
PREPROCESSING = "preprocessing.json"
FINGERPRINT = "fingerprint"
"""The key under which every file of a bundle names its run's fingerprint."""


def write_role(target: Path, manifest: dict[str, Any], config: RunConfig, model: nn.Module) -> None:
    """Write a role's manifest, config and weights into ``target``, each naming the run."""
    target.mkdir(parents=True, exist_ok=True)
    run = manifest[FINGERPRINT]
    state = {name: tensor.detach().contiguous() for name, tensor in model.state_dict().items()}
    save_file(state, str(target / WEIGHTS), metadata={FINGERPRINT: run})
    (target / CONFIG).write_text(f'{FINGERPRINT} = "{run}"\n\n' + to_toml(config))
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def read_role(
    folder: Path, role: str, *, bundle_format: str = FORMAT
) -> tuple[dict[str, Any], RunConfig]:
    """A role's manifest and config, the config checked against the manifest's run.

    ``bundle_format``: the manifest's format (a tree run's bundles have their own).

    Raises:
        DataError: naming the file that is missing, malformed, or of another run.
    """
    try:
        manifest: dict[str, Any] = json.loads(_text(folder / MANIFEST))
    except json.JSONDecodeError as error:
        raise DataError(f"{folder / MANIFEST} is not JSON: {error}") from None
    if manifest.get("format") != bundle_format or manifest.get("role") != role:
        raise DataError(
            f"{folder / MANIFEST} is not a {role} bundle of format {bundle_format!r} (format"
            f" {manifest.get('format')!r}, role {manifest.get('role')!r})"
        )
    if not isinstance(manifest.get(FINGERPRINT), str):
        raise DataError(f"{folder / MANIFEST} names no run fingerprint: not a complete bundle")
    raw = tomllib.loads(_text(folder / CONFIG))
    _check_fingerprint(folder / CONFIG, raw.pop(FINGERPRINT, None), manifest[FINGERPRINT])
    return manifest, saved_config(raw)


def read_preprocessing(folder: Path, run: str) -> dict[str, Any]:
    """A party's ``preprocessing.json``, checked against the run ``run``."""
    path = folder / PREPROCESSING
    try:
        preprocessing: dict[str, Any] = json.loads(_text(path))
    except json.JSONDecodeError as error:
        raise DataError(f"{path} is not JSON: {error}") from None
    _check_fingerprint(path, preprocessing.pop(FINGERPRINT, None), run)
    return preprocessing


def _check_fingerprint(path: Path, found: object, run: str) -> None:
    """Refuse a bundle file that names another run than its manifest.

    ``found`` is ``None`` for a file of an older bundle, which names no run.
    """
    if found is not None and found != run:
        raise DataError(
            f"{path} comes from another run: it carries the run fingerprint {str(found)[:12]},"
            f" its bundle's manifest {run[:12]}; copy every file of a bundle from one export, or"
            " export the bundle again"
        )


def load_weights(folder: Path, model: nn.Module, run: str) -> None:
    """Load a role's weights into ``model``, checked against the run ``run``.

    Raises:
        DataError: naming the weights file if it is missing, not safetensors, of another run,
            or of another shape.
    """
    path = folder / WEIGHTS
    if not path.is_file():
        raise DataError(f"{path} is missing: the bundle has no weights")
    try:
        with safe_open(str(path), "pt") as handle:
            metadata = handle.metadata() or {}
        state = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise DataError(
            f"{path} is not a safetensors file ({error}); bundles hold no pickle"
        ) from None
    _check_fingerprint(path, metadata.get(FINGERPRINT), run)
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        raise DataError(f"{path} does not fit the model its config describes: {error}") from None


def _text(path: Path) -> str:
    if not path.is_file():
        raise DataError(f"{path} is missing: not a complete bundle")
    return path.read_text()
