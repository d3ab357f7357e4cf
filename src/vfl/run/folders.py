"""Run folders, before torch loads: where a new run goes, what a resumed one may change.

``vfl run`` settles the folder (a new run's must be missing or empty; a resumed run's config is
read from it) before it imports torch, so that a refusal takes no seconds.

A checkpoint keeps the resolved config it was trained with. On resume the config (the run's
``config.toml``, edited or not, plus ``--set`` overrides) must equal it but for
``RESUMABLE_KEYS``: fields that decide how long to train and where and how results are shown
and saved, never what one round computes. Anything else would continue a run with a model,
data or optimizer other than the one its checkpoint holds: silently different results, or a
tensor-shape failure deep in the restore.
"""

from __future__ import annotations

import dataclasses
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vfl.config import RunConfig
from vfl.config.fields import show
from vfl.config.io import from_mapping, merge, parse_overrides, read_toml
from vfl.config.saved import canonical, saved_config, saved_settings
from vfl.errors import ConfigError
from vfl.results.files import CONFIG

RESUMABLE_KEYS = (
    "train.epochs",
    "train.checkpoint",
    "train.checkpoint_every",
    "train.device",
    "output.dir",
    "output.name",
    "output.progress",
    "privacy.max_epsilon",
    "boost.num_trees",
    "boost.workers",
)
"""Fields a resumed run may change: how long it trains, when it checkpoints, where it trains (a
run saved on CUDA resumes on the CPU, or the other way), where results go
(``--resume RUN_DIR`` names the folder, so ``output.dir`` and ``output.name`` are not used) and
whether a progress bar shows; for a tree run, how many trees it grows and how many processes
encrypt. None of them changes what a round (or a tree) computes."""


def default_run_dir(config: RunConfig, label: str) -> Path:
    """``output.dir / output.name``, or ``output.dir / <label>-<timestamp>``."""
    name = config.output.name or f"{label}-{time.strftime('%Y%m%d-%H%M%S')}"
    return Path(config.output.dir) / name


def resumed_config(run_dir: Path, overrides: Sequence[str]) -> RunConfig:
    """The config to resume ``run_dir`` with: its ``config.toml`` plus ``overrides``.

    Raises:
        ConfigError: if ``run_dir`` is not a run folder, or an override is of a field that
            cannot change on resume.
    """
    if not (run_dir / CONFIG).is_file():
        what = "does not exist" if not run_dir.exists() else f"holds no {CONFIG}"
        raise ConfigError(f"--resume {str(run_dir)!r}: {what}, so it is not a run to resume")
    for item in overrides:
        key = item.partition("=")[0].strip()
        if key not in RESUMABLE_KEYS:
            raise ConfigError(
                f"--set {key} cannot change on resume; only {', '.join(RESUMABLE_KEYS)} can"
            )
    saved = as_made(read_toml(run_dir / CONFIG))
    given = parse_overrides(overrides)
    with saved_settings():
        config = from_mapping(RunConfig, merge(saved, given))
    config, reset = canonical(config)
    for item in overrides:
        key = item.partition("=")[0].strip()
        if key in reset:
            raise ConfigError(
                f"--set {item.strip()} does not apply to this run: vfl would leave it at its"
                " default"
            )
    return config


def as_made(saved: dict[str, Any]) -> dict[str, Any]:
    """A saved run config with the behaviour it was made with where a later key changed it.

    A run folder written before pipelined rounds has no ``protocol.pipeline``: it resumes with
    ``false``, the message pattern it started with, not with today's default.
    """
    protocol = saved.get("protocol")
    if isinstance(protocol, dict) and "pipeline" not in protocol:
        return {**saved, "protocol": {**protocol, "pipeline": False}}
    return saved


def check_unchanged(trained: str, config: RunConfig, run_dir: Path, source: str = "") -> None:
    """Refuse to resume with ``config`` where it differs from the checkpoint's config.

    ``trained`` is the TOML text the checkpoint keeps; only ``RESUMABLE_KEYS`` may differ.
    ``source`` names where ``config`` was read (default: the run's ``config.toml``).

    Raises:
        ConfigError: naming every changed field, its old and new value.
    """
    try:
        before = saved_config(as_made(tomllib.loads(trained)))
    except (ConfigError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(
            f"the config kept in the checkpoint of {str(run_dir)!r} no longer loads ({error});"
            " it was written by another version of vfl: start a new run"
        ) from None
    now = canonical(config)[0]
    old, new = _flat(dataclasses.asdict(before)), _flat(dataclasses.asdict(now))
    changed = [
        f"{key} ({show(old.get(key))} -> {show(new.get(key))})"
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key) and key not in RESUMABLE_KEYS
    ]
    if changed:
        raise ConfigError(
            f"the config of {str(run_dir)!r} differs from the one its checkpoint was trained"
            f" with in {', '.join(changed)}; only {', '.join(RESUMABLE_KEYS)} may change on"
            f" resume: undo the change in {source or repr(str(run_dir / CONFIG))}, or start a new"
            " run"
        )


def _flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
