"""Expand a sweep into settings and runs, resolve every run's config, and classify run folders.

Settings are the grid's cartesian product (the first grid key varies slowest) followed by the
``[[case]]`` entries. Each (setting, seed) is one run in ``<sweep folder>/<setting>__seed<S>``.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tomli_w

from vfl.config import RunConfig, load_config
from vfl.config.io import read_toml, to_toml
from vfl.config.saved import canonical, saved_config, saved_settings
from vfl.errors import ConfigError
from vfl.experiments.files import CHECKPOINT, CONFIG, ERROR, METRICS, SUMMARY, read_metrics
from vfl.experiments.spec import SEED_KEY, Overrides, SweepSpec
from vfl.results.files import RunFileError

RunState = Literal["done", "partial", "superseded", "new"]
"""``done``: finished with the same config; ``partial``: a checkpoint to continue;
``superseded``: the folder holds anything else (another config's run, files that are no run);
``new``: no folder, or one holding only the ``error.txt`` of a failed start."""
STATES: tuple[RunState, ...] = ("done", "partial", "superseded", "new")

IGNORED_SECTIONS = ("output",)
"""Config tables that do not change a run's results, so they never force a re-run."""


@dataclass(frozen=True)
class Setting:
    """One point of the sweep (a grid point or a case).

    Attributes:
        label: Row label of the tables and legend entry, e.g. ``"lr=0.001, batch_size=64"``.
        name: The label as a folder-name stem, e.g. ``"lr=0.001,batch_size=64"``.
        overrides: The setting's own overrides (the sweep's ``set`` excluded).
    """

    label: str
    name: str
    overrides: Overrides


@dataclass(frozen=True)
class PlannedRun:
    """One (setting, seed) with its resolved config."""

    setting: Setting
    seed: int
    name: str
    config: RunConfig


def expand(spec: SweepSpec) -> tuple[Setting, ...]:
    """The sweep's settings: the grid's product, then the cases (or the bare base config).

    Raises:
        ConfigError: if two settings would share a run folder.
    """
    keys = [key for key, _ in spec.grid]
    label_keys = list(spec.report.label) or keys
    settings = []
    for values in itertools.product(*(values for _, values in spec.grid)) if keys else []:
        overrides = tuple(zip(keys, values, strict=True))
        chosen = dict(overrides)
        settings.append(_setting(_label([(k, chosen[k]) for k in label_keys]), overrides))
    for case in spec.cases:
        settings.append(_setting(case.label or _label(list(case.overrides)), case.overrides))
    if not settings:
        settings.append(_setting(spec.base.stem, ()))
    _check_unique(settings, bool(spec.report.label))
    return tuple(settings)


def plan(spec: SweepSpec) -> tuple[PlannedRun, ...]:
    """Every run of the sweep with its config resolved from the base file and the overrides.

    All configs are resolved before any run starts, so a bad key or value in any setting stops
    the sweep at once. A key of the base file or ``[set]`` may apply to some settings only
    (``compress.embedding.select`` over a grid of compressors): where it does not, the run has
    its default (``vfl.config.applicability``); a key that applies to no setting, or a setting's
    own key that does not apply to it, is refused.

    Raises:
        ConfigError: naming the setting and the offending key.
    """
    runs = []
    everywhere: set[str] | None = None
    for setting in expand(spec):
        for seed in spec.seeds:
            config, reset = _resolved(spec, setting, seed)
            everywhere = set(reset) if everywhere is None else everywhere & set(reset)
            runs.append(PlannedRun(setting, seed, _run_name(setting, seed), config))
    if everywhere:
        key = sorted(everywhere)[0]
        raise ConfigError(
            f"{key} (set in {spec.base.name}, the sweep's [set] or --set) applies to no setting"
            " of the sweep; remove it"
        )
    return tuple(runs)


def _run_name(setting: Setting, seed: int) -> str:
    return f"{setting.name}__seed{seed}"


def _resolved(spec: SweepSpec, setting: Setting, seed: int) -> tuple[RunConfig, list[str]]:
    """One run's config, and the keys left at their defaults because they do not apply."""
    overrides = [*spec.overrides, *setting.overrides, *spec.command_line, (SEED_KEY, seed)]
    overrides += [("output.dir", str(spec.folder)), ("output.name", _run_name(setting, seed))]
    overrides += [("output.progress", False)]
    try:
        with saved_settings():
            config = load_config(spec.base, [f"{k}={toml_value(v)}" for k, v in overrides])
    except ConfigError as error:
        raise ConfigError(f"setting {setting.label!r}: {error}") from None
    config, reset = canonical(config)
    for key, value in setting.overrides:
        if key in reset:
            raise ConfigError(
                f"setting {setting.label!r}: {key} = {toml_value(value)} does not apply to it"
                " (the run would leave it at its default); remove it from the setting"
            )
    return config, reset


def run_state(run_dir: Path, config: RunConfig) -> RunState:
    """Whether ``run_dir`` holds this run finished, resumable, something else, or nothing.

    ``done``: ``summary.json`` exists and the saved ``config.toml`` equals ``config`` (the
    ``[output]`` table aside; keys the saved file lacks count as their defaults). ``partial``:
    a checkpoint exists, the saved config differs at most in ``train.epochs``, and no more epochs
    were recorded than ``config`` asks for (so a longer sweep extends finished runs).
    ``superseded``: the folder holds anything else. ``new``: there is no folder, or it holds
    nothing but the ``error.txt`` of a run that failed before it wrote anything.
    """
    if not run_dir.exists() or _holds_only_an_error(run_dir):
        return "new"
    try:
        # Re-read through today's loader, so keys added to the config since the run (with their
        # defaults) do not make a finished run look different.
        saved = saved_config(read_toml(run_dir / CONFIG))
    except ConfigError:
        return "superseded"
    saved_table = _comparable(tomllib.loads(to_toml(saved)))
    wanted = _comparable(tomllib.loads(to_toml(config)))
    if saved_table == wanted and (run_dir / SUMMARY).exists():
        return "done"
    resumable = (run_dir / CHECKPOINT).exists() and _without_epochs(saved_table) == _without_epochs(
        wanted
    )
    if resumable and recorded_epochs(run_dir) <= config.train.epochs:
        return "partial"
    return "superseded"


def superseded_why(run_dir: Path, config: RunConfig) -> str:
    """Why a ``superseded`` folder cannot be kept or continued, in a few words."""
    try:
        saved = saved_config(read_toml(run_dir / CONFIG))
    except ConfigError:
        return f"its {CONFIG} is missing or unreadable: it is no run of this sweep"
    same = _without_epochs(_comparable(tomllib.loads(to_toml(saved)))) == _without_epochs(
        _comparable(tomllib.loads(to_toml(config)))
    )
    if not same:
        return "it holds a run of another config"
    if not (run_dir / CHECKPOINT).exists():
        return "it holds this run unfinished, without a checkpoint to continue from"
    if math.isinf(recorded_epochs(run_dir)):
        return f"its {METRICS} is damaged before its last line"
    return "it recorded more epochs than this sweep asks for"


def toml_value(value: Any) -> str:
    """A value as one-line TOML source text, e.g. ``0.001``, ``"adam"``, ``[64, 32]``."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    return tomli_w.dumps({"v": value}).partition("=")[2].strip()


def _label(pairs: list[tuple[str, Any]]) -> str:
    short = [key.rpartition(".")[2] for key, _ in pairs]
    names = [s if short.count(s) == 1 else key for s, (key, _) in zip(short, pairs, strict=True)]
    shown = [f"{name}={_show(value)}" for name, (_, value) in zip(names, pairs, strict=True)]
    return ", ".join(shown)


def _show(value: Any) -> str:
    return value if isinstance(value, str) else toml_value(value)


def _setting(label: str, overrides: Overrides) -> Setting:
    compact = re.sub(r"[\[\]\"']", "", label.replace(", ", ","))
    name = re.sub(r"[^A-Za-z0-9._=,+-]+", "-", compact).strip("-.")
    return Setting(label, name or "setting", overrides)


def _check_unique(settings: list[Setting], custom_label: bool) -> None:
    seen: dict[str, Setting] = {}
    for setting in settings:
        other = seen.setdefault(setting.name.casefold(), setting)
        if other is not setting:
            fix = "list more grid keys in report.label" if custom_label else "rename a case"
            raise ConfigError(
                f"settings {other.label!r} and {setting.label!r} would share the run folder"
                f" {setting.name!r}; {fix} so that every setting has its own label"
            )


def _holds_only_an_error(run_dir: Path) -> bool:
    return run_dir.is_dir() and {path.name for path in run_dir.iterdir()} <= {ERROR}


def recorded_epochs(run_dir: Path) -> float:
    """The last epoch ``metrics.jsonl`` records (0 without one; infinite if it is damaged).

    A last line a killed run cut short does not count: resuming drops it, as ``vfl run
    --resume`` does.
    """
    if not (run_dir / METRICS).exists():
        return 0
    try:
        records = read_metrics(run_dir, torn_tail=True)
    except (ValueError, RunFileError):  # damaged before its last line: start afresh
        return math.inf
    return max((int(r["epoch"]) for r in records), default=0)


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in IGNORED_SECTIONS}


def _without_epochs(config: dict[str, Any]) -> dict[str, Any]:
    train = {k: v for k, v in config.get("train", {}).items() if k != "epochs"}
    return {**config, "train": train}
