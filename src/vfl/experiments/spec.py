"""The sweep file: a base run config, overrides for every run, a grid, extra cases and seeds.

A sweep file is TOML (``docs/experiments.md`` has a full example)::

    base = "../examples/adult_3party.toml"     # relative to the sweep file
    name = "adult-lr"                           # folder under output_dir
    seeds = [0, 1]
    set = { "train.epochs" = 3 }
    [grid]
    "train.optimizer.lr" = [1e-3, 3e-3]

``read_sweep`` validates everything except the run config keys themselves, which ``plan`` checks
by resolving every run's config before anything runs.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from vfl.config import TARGET_METRICS, TargetConfig
from vfl.config.fields import Distinct, Each, NonEmpty, OneOf, Range, Satisfies
from vfl.config.io import from_mapping, parse_overrides, read_toml
from vfl.config.section import Section
from vfl.errors import ConfigError

ATTACK_METRICS = (
    *("attack_norm_auc", "attack_direction_auc", "attack_accuracy", "attack_accuracy_prior"),
    *("attack_mse", "attack_mse_prior", "attack_ssim", "attack_ssim_prior"),
)
"""What an ``[attack]`` adds to each epoch's record (``vfl.attacks.scoring``)."""
REPORT_METRICS = (*(m for m in TARGET_METRICS if m), "train_loss", *ATTACK_METRICS)
"""Metrics a report can draw and tabulate: every target metric, the training loss and the
attack metrics."""

SEED_KEY = "train.seed"
TOP_LEVEL_KEYS = (
    *("base", "name", "output_dir", "seeds", "workers"),
    *("set", "grid", "case", "target", "report"),
)
CASE_KEYS = ("label", "set")

Overrides = tuple[tuple[str, Any], ...]
"""Dotted config keys and their TOML values, in file order."""


@dataclass(frozen=True)
class ReportConfig(Section):
    """The ``[report]`` table: what the tables and plots show.

    Attributes:
        label: Grid keys that form each setting's label, in this order (default: every grid key).
        metric: The metric of the curves and tables (default: the target metric, else
            ``test_accuracy``).
        log_x: Draw the metric-against-traffic plot with a logarithmic x axis.
    """

    label: tuple[str, ...] = ()
    metric: Annotated[str, OneOf(("", *REPORT_METRICS))] = ""
    log_x: bool = False


def _is_folder_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..")


@dataclass(frozen=True)
class _SweepFile(Section):
    """The scalar part of a sweep file, typed by ``vfl.config.io.from_mapping``."""

    base: Annotated[str, NonEmpty("must name the base run config (a path to a TOML file)")] = ""
    name: Annotated[str, Satisfies(_is_folder_name, "must be a folder name (no '/')")] = ""
    output_dir: str = "runs/sweeps"
    seeds: Annotated[
        tuple[int, ...],
        NonEmpty("must list at least one seed, e.g. [0, 1, 2]"),
        Each(Range(ge=0)),
        Distinct(),
    ] = (0,)
    workers: Annotated[int, Range(ge=1)] = 1
    target: TargetConfig = field(default_factory=TargetConfig)
    report: ReportConfig = field(default_factory=ReportConfig)


@dataclass(frozen=True)
class Case:
    """One extra setting outside the grid (a ``[[case]]`` entry)."""

    label: str
    overrides: Overrides


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep file.

    Attributes:
        path: The sweep file.
        base: The base run config (resolved against the sweep file's folder).
        name: The sweep folder's name.
        output_dir: The parent of the sweep folder (relative to the working directory).
        seeds: Values of ``train.seed``; every setting runs once per seed.
        workers: Parallel worker processes.
        overrides: The ``set`` table: overrides for every run.
        grid: The ``[grid]`` table: each key with its values; settings are their product.
        cases: The ``[[case]]`` entries: settings outside the grid.
        target: The target of the cost-to-target columns, or ``None``.
        report: The ``[report]`` table.
        command_line: ``vfl sweep --set`` overrides, applied to every run after its
            setting's (to shorten a sweep, say); ``with_command_line`` adds them.
    """

    path: Path
    base: Path
    name: str
    output_dir: Path
    seeds: tuple[int, ...]
    workers: int
    overrides: Overrides
    grid: tuple[tuple[str, tuple[Any, ...]], ...]
    cases: tuple[Case, ...]
    target: TargetConfig | None
    report: ReportConfig
    command_line: Overrides = ()

    @property
    def folder(self) -> Path:
        """The sweep folder: ``output_dir / name``."""
        return self.output_dir / self.name

    @property
    def metric(self) -> str:
        """The report metric: ``[report] metric``, else the target's, else ``test_accuracy``."""
        if self.report.metric:
            return self.report.metric
        return self.target.metric if self.target is not None else "test_accuracy"


def read_sweep(path: Path) -> SweepSpec:
    """Read and validate a sweep file.

    Raises:
        ConfigError: naming the offending key and what is valid.
    """
    raw = read_toml(path)
    _check_keys(raw, TOP_LEVEL_KEYS, "the top level of the sweep file")
    scalars = {k: v for k, v in raw.items() if k not in ("set", "grid", "case")}
    target = raw.get("target")
    if isinstance(target, dict) and not target.get("metric"):
        valid = ", ".join(repr(m) for m in TARGET_METRICS if m)
        raise ConfigError(f"target.metric: required in a [target] table; one of {valid}")
    typed = from_mapping(_SweepFile, scalars)
    overrides = flatten(_table(raw.get("set", {}), "set"), "set")
    grid = _grid(_table(raw.get("grid", {}), "grid"))
    cases = _cases(raw.get("case", []))
    _check_label_keys(typed.report.label, [key for key, _ in grid])
    return SweepSpec(
        path=path,
        base=path.parent / typed.base,
        name=typed.name,
        output_dir=Path(typed.output_dir),
        seeds=typed.seeds,
        workers=typed.workers,
        overrides=overrides,
        grid=grid,
        cases=cases,
        target=typed.target if typed.target.metric else None,
        report=typed.report,
    )


def flatten(table: Mapping[str, Any], where: str, prefix: str = "") -> Overrides:
    """``{"train": {"epochs": 3}, "data.name": "adult"}`` as ``(("train.epochs", 3), ...)``.

    Quoted dotted keys and nested tables mean the same thing, since no config value is a table.
    Setting ``train.seed`` is refused: the sweep's ``seeds`` own it.
    """
    pairs: list[tuple[str, Any]] = []
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            pairs.extend(flatten(value, where, f"{dotted}."))
        elif dotted == SEED_KEY:
            raise ConfigError(f"{where}: {SEED_KEY!r} is set by the sweep's `seeds` list")
        else:
            pairs.append((dotted, value))
    return tuple(pairs)


def _grid(table: Mapping[str, Any]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    grid = []
    for key, values in flatten(table, "grid"):
        if not isinstance(values, list) or not values:
            raise ConfigError(
                f"grid.{key} must be a non-empty array of values, got {values!r}; write"
                f' e.g. "{key}" = [a, b]'
            )
        if any(values.index(value) != i for i, value in enumerate(values)):
            raise ConfigError(f"grid.{key} repeats a value: {values!r}")
        grid.append((key, tuple(values)))
    return tuple(grid)


def _cases(raw: Any) -> tuple[Case, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, Mapping) for item in raw):
        raise ConfigError(f"case must be an array of tables ([[case]] entries), got {raw!r}")
    cases = []
    for index, item in enumerate(raw):
        where = f"case[{index}]"
        _check_keys(item, CASE_KEYS, where)
        overrides = flatten(_table(item.get("set", {}), f"{where}.set"), f"{where}.set")
        label = item.get("label", "")
        if not isinstance(label, str):
            raise ConfigError(f"{where}.label must be a string, got {label!r}")
        if not label and not overrides:
            raise ConfigError(f"{where} needs a `label` or a `set` table (or both)")
        cases.append(Case(label, overrides))
    return tuple(cases)


def _check_label_keys(label: tuple[str, ...], grid_keys: list[str]) -> None:
    for key in label:
        if key not in grid_keys:
            valid = ", ".join(map(repr, grid_keys)) or "(the grid is empty)"
            raise ConfigError(f"report.label: {key!r} is not a grid key; grid keys: {valid}")
    if len(set(label)) != len(label):
        raise ConfigError(f"report.label repeats a key: {list(label)}")


def _check_keys(table: Mapping[str, Any], valid: tuple[str, ...], where: str) -> None:
    unknown = [key for key in table if key not in valid]
    if unknown:
        close = difflib.get_close_matches(unknown[0], valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(
            f"unknown key {unknown[0]!r}{hint} in {where}; valid keys: {', '.join(valid)}"
        )


def _table(value: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key} must be a table of dotted config keys, got {value!r}")
    return value


def with_command_line(spec: SweepSpec, overrides: Sequence[str]) -> SweepSpec:
    """``spec`` with ``vfl sweep --set KEY=VALUE`` overrides for every run.

    Raises:
        ConfigError: if an override does not look like ``section.key=value`` or sets
            ``train.seed`` (the ``seeds`` list owns it).
    """
    parsed = flatten(parse_overrides(overrides), "--set")
    return dataclasses.replace(spec, command_line=spec.command_line + parsed)
