"""Run configuration: typed sections with their range checks, and every cross-field rule.

``sections`` and ``stages`` hold the section dataclasses, each field's valid range declared next
to it (``fields``); ``schema`` the whole ``RunConfig`` and ``load_config``; ``rules`` every rule
between fields; ``io`` typed TOML loading and overrides.
"""

from vfl.config import rules as rules  # imported for its effect: registers every rule
from vfl.config.attack import AttackConfig
from vfl.config.boost import BoostConfig
from vfl.config.protocols import ProtocolConfig
from vfl.config.schema import RunConfig, load_config
from vfl.config.sections import (
    TARGET_METRICS,
    BottomConfig,
    DataConfig,
    HeadConfig,
    ModelConfig,
    OptimizerConfig,
    OutputConfig,
    PartitionConfig,
    TargetConfig,
    TrainConfig,
)
from vfl.config.stages import (
    CompressConfig,
    CompressorConfig,
    LightweightConfig,
    PartyLightweightConfig,
    PrivacyConfig,
    RatioScheduleConfig,
)

__all__ = [
    "TARGET_METRICS",
    "AttackConfig",
    "BoostConfig",
    "BottomConfig",
    "CompressConfig",
    "CompressorConfig",
    "DataConfig",
    "HeadConfig",
    "LightweightConfig",
    "ModelConfig",
    "OptimizerConfig",
    "OutputConfig",
    "PartitionConfig",
    "PartyLightweightConfig",
    "PrivacyConfig",
    "ProtocolConfig",
    "RatioScheduleConfig",
    "RunConfig",
    "TargetConfig",
    "TrainConfig",
    "load_config",
]
