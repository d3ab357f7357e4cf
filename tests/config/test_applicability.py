"""Every setting that applies only under another is refused where it does not apply, by one rule.

Each pair of ``vfl.config.applicability.APPLICABILITY`` has a case here (a test checks that none
is missing): the value where it does not apply is refused naming the key, and (the negative
control) the same value is accepted once what makes it apply is set. A config vfl wrote with
such a value is still read, with the value reset to its default.
"""

from __future__ import annotations

import tomllib

import pytest

from vfl.config import RunConfig, load_config
from vfl.config.applicability import APPLICABILITY
from vfl.config.attack import AttackConfig
from vfl.config.io import to_toml
from vfl.config.saved import canonical, saved_config
from vfl.config.sections import (
    BottomConfig,
    HeadConfig,
    OptimizerConfig,
    PartitionConfig,
    TargetConfig,
    TrainConfig,
)
from vfl.config.stages import (
    CompressorConfig,
    GradientNoiseConfig,
    LightweightConfig,
    PrivacyConfig,
    RatioScheduleConfig,
)
from vfl.errors import ConfigError

PREFIX = {
    OptimizerConfig: "train.optimizer.",
    TrainConfig: "train.",
    BottomConfig: "model.bottom.",
    HeadConfig: "model.head.",
    PartitionConfig: "partition.",
    TargetConfig: "target.",
    CompressorConfig: "compress.embedding.",
    PrivacyConfig: "privacy.",
    GradientNoiseConfig: "privacy.gradient_noise.",
    RatioScheduleConfig: "lightweight.alpha.",
    LightweightConfig: "lightweight.",
    AttackConfig: "attack.",
    RunConfig: "",
}
"""Where each section's keys sit in a run config (one place each, for the cases)."""

PBM = ["privacy.mechanism=pbm", "model.head.fusion=sum", "model.bottom.output_activation=tanh"]
SCALAR = ["compress.embedding.name=scalar", "compress.embedding.bits=4"]
TOPK = ["compress.embedding.name=topk", "compress.embedding.bits=4"]
LINEAR = ["lightweight.alpha.kind=linear", "lightweight.alpha.end_round=10"]
MODEL_COMPLETION = ["attack.name=model_completion"]
RECONSTRUCTION = ["attack.name=feature_reconstruction", "attack.role=server"]

CASES: dict[str, tuple[str, list[str], list[str]]] = {
    # key: (value, where it does not apply, what makes it apply)
    "train.optimizer.momentum": ("0.5", [], ["train.optimizer.name=sgd"]),
    "train.optimizer.lr_gamma": ("0.5", [], ["train.optimizer.lr_schedule=exponential"]),
    "train.optimizer.lr_step_epochs": ("3", [], ["train.optimizer.lr_schedule=step"]),
    "train.checkpoint_every": ("5", ["train.checkpoint=false"], []),
    "model.bottom.channels": ("[8, 8]", [], ["model.bottom.kind=cnn"]),
    "model.bottom.activation": ("'tanh'", ["model.bottom.hidden=[]"], []),
    "model.head.activation": ("'tanh'", [], ["model.head.hidden=[8]"]),
    "partition.seed": ("3", [], ["partition.scheme=random"]),
    "target.value": ("0.9", [], ["target.metric=test_accuracy"]),
    "target.compute_ms": ("5.0", [], ["target.metric=test_accuracy"]),
    "target.latencies_ms": ("[1.0]", [], ["target.metric=test_accuracy"]),
    "compress.embedding.bits": ("4", [], ["compress.embedding.name=scalar"]),
    "compress.embedding.range": ("'fixed'", [], SCALAR),
    "compress.embedding.low": ("-2.0", SCALAR, [*SCALAR, "compress.embedding.range=fixed"]),
    "compress.embedding.high": ("2.0", SCALAR, [*SCALAR, "compress.embedding.range=fixed"]),
    "compress.embedding.ratio": ("0.1", SCALAR, ["compress.embedding.name=topk"]),
    "compress.embedding.select": ("'gradient'", SCALAR, TOPK),
    "compress.embedding.per_row": ("true", SCALAR, TOPK),
    "compress.embedding.schedule": ("'diminishing'", [], SCALAR),
    "compress.embedding.steps": (
        "[[0, 2], [10, 3]]",
        SCALAR,
        [*SCALAR, "compress.embedding.schedule=steps"],
    ),
    "compress.evaluation": ("'on'", [], SCALAR),
    "privacy.trials": ("8", [], PBM),
    "privacy.beta": ("0.1", [], PBM),
    "privacy.clip": ("2.0", [], PBM),
    "privacy.eval_fraction_bits": ("20", [], PBM),
    "privacy.sampler": ("'torch'", [], PBM),
    "privacy.randomness": ("'os'", [], PBM),
    "privacy.delta": ("1e-6", [], PBM),
    "privacy.gradient_noise.clip": ("2.0", [], ["privacy.gradient_noise.noise_multiplier=1.0"]),
    "protocol.proximal_mu": ("0.1", [], ["protocol.local_steps=2"]),
    "lightweight.alpha.value": (
        "0.2",
        ["lightweight.alpha.kind=steps", "lightweight.alpha.steps=[[0, 0.1]]"],
        [],
    ),
    "lightweight.alpha.steps": ("[[0, 0.1]]", [], ["lightweight.alpha.kind=steps"]),
    "lightweight.alpha.start_round": ("1", [], LINEAR),
    "lightweight.alpha.end_round": ("10", [], ["lightweight.alpha.kind=linear"]),
    "lightweight.alpha.start_value": ("0.1", [], LINEAR),
    "lightweight.alpha.end_value": ("0.2", [], LINEAR),
    "lightweight.alpha.values": ("[0.1, 0.2]", [], ["lightweight.alpha.kind=table"]),
    "lightweight.prune_at": (
        "'after_upload'",
        ["protocol.labels=shared"],
        ["protocol.labels=shared", "lightweight.alpha.value=0.1"],
    ),
    "attack.role": ("'server'", [], ["attack.name=feature_reconstruction"]),
    "attack.party": ("2", [], ["attack.name=label_inference"]),
    "attack.label_inference.known_positives": ("3", [], ["attack.name=label_inference"]),
    "attack.label_inference.multiclass": ("'off'", [], ["attack.name=label_inference"]),
    "attack.model_completion.labels": ("10", [], MODEL_COMPLETION),
    "attack.model_completion.hidden": ("[8]", [], MODEL_COMPLETION),
    "attack.model_completion.epochs": ("5", [], MODEL_COMPLETION),
    "attack.model_completion.lr": ("0.1", [], MODEL_COMPLETION),
    "attack.feature_reconstruction.aux_fraction": ("0.2", [], RECONSTRUCTION),
    "attack.feature_reconstruction.hidden": ("[8]", [], RECONSTRUCTION),
    "attack.feature_reconstruction.epochs": ("5", [], RECONSTRUCTION),
    "attack.feature_reconstruction.batch_size": ("16", [], RECONSTRUCTION),
    "attack.feature_reconstruction.lr": ("0.01", [], RECONSTRUCTION),
}


def test_every_pair_of_the_table_has_a_case() -> None:
    listed = {
        PREFIX[cls] + entry.key for cls, entries in APPLICABILITY.items() for entry in entries
    }
    assert listed == set(CASES)


@pytest.mark.parametrize("key", list(CASES))
def test_a_setting_where_it_does_not_apply_is_refused_naming_it(key: str) -> None:
    # Prepare
    value, context, _ = CASES[key]

    # Execute
    with pytest.raises(ConfigError) as caught:
        load_config(None, [*context, f"{key}={value}"])

    # Assert
    message = str(caught.value)
    assert message.startswith(f"{key}: ") and "does not apply: it is used only" in message


@pytest.mark.parametrize("key", list(CASES))
def test_the_same_setting_is_accepted_where_it_applies(key: str) -> None:
    # Prepare: the negative control of the refusal above
    value, _, applies = CASES[key]

    # Execute
    config = load_config(None, [*applies, f"{key}={value}"])

    # Assert: kept as given
    assert canonical(config)[1] == []


def test_a_config_vfl_wrote_with_such_a_setting_is_read_with_its_default() -> None:
    # Prepare: what an older version wrote: lr_gamma under the constant schedule
    written = to_toml(load_config(None, ["train.optimizer.lr_schedule=step"]))
    text = written.replace('lr_schedule = "step"', 'lr_schedule = "constant"')
    text = text.replace("lr_gamma = 0.1", "lr_gamma = 0.5")
    assert text != written

    # Execute
    config = saved_config(tomllib.loads(text))

    # Assert
    assert config.train.optimizer.lr_gamma == 0.1
    assert config == load_config(None, [])
