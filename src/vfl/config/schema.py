"""Run configuration: frozen dataclasses, one per concern, validated eagerly.

A run is described by a TOML file whose tables mirror these classes (``[data]``, ``[partition]``,
``[model.bottom]``, ``[model.head]``, ``[train]``, ``[train.optimizer]``, ``[protocol]``,
``[output]``, ``[boost]`` for boosted trees). ``load_config`` applies ``--set key=value``
overrides and validates the result.
The sections live in ``vfl.config.sections`` and ``vfl.config.stages``; the rules between
sections in ``vfl.config.rules``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vfl.config.attack import AttackConfig
from vfl.config.boost import BoostConfig
from vfl.config.io import from_mapping, merge, parse_overrides, read_toml, with_paths_resolved
from vfl.config.protocols import ProtocolConfig
from vfl.config.section import Section
from vfl.config.sections import (
    DataConfig,
    ModelConfig,
    OutputConfig,
    PartitionConfig,
    TargetConfig,
    TrainConfig,
)
from vfl.config.stages import CompressConfig, LightweightConfig, PrivacyConfig


@dataclass(frozen=True)
class RunConfig(Section):
    """A whole run."""

    data: DataConfig = field(default_factory=DataConfig)
    partition: PartitionConfig = field(default_factory=PartitionConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    compress: CompressConfig = field(default_factory=CompressConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    lightweight: LightweightConfig = field(default_factory=LightweightConfig)
    target: TargetConfig = field(default_factory=TargetConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    attack: AttackConfig = field(default_factory=AttackConfig)
    boost: BoostConfig = field(default_factory=BoostConfig)


RUN_CONFIG_PATHS = {"data": ("path", "test_path")}
"""The input files a run config names: relative to the config file's folder. ``output.dir``
is where results go, relative to the working directory (``runs`` beside the user's shell)."""


def load_config(path: Path | None = None, overrides: Sequence[str] = ()) -> RunConfig:
    """Load a run config from TOML (defaults when ``path`` is None) with ``key=value`` overrides.

    The file's relative ``data.path`` and ``data.test_path`` resolve against its folder;
    overrides are taken as given.

    Raises:
        ConfigError: naming the offending key and what is valid.
    """
    raw = {}
    if path is not None:
        raw = with_paths_resolved(read_toml(path), RUN_CONFIG_PATHS, path.parent)
    return from_mapping(RunConfig, merge(raw, parse_overrides(overrides)))
