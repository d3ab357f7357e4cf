"""Settings that apply only under other settings: every such pair, in one table.

A value other than a field's default where the field does not apply would be silently ignored
(``lr_gamma`` under the constant schedule, ``checkpoint_every`` with checkpoints off), so the
one rule ``vfl.config.rules._settings_apply`` refuses it, naming the key, its value and what
makes it apply. Keys are relative to the section the entry is listed under (dotted for nested
sections); a condition reads that section. Fields whose use depends on the data (a categorical
column, the number of classes) are checked where the data is loaded, not here.

A config vfl wrote earlier is read with such values accepted and then reset to their defaults
(``vfl.config.saved``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vfl.config.attack import ATTACKS, NO_ATTACK, AttackConfig
from vfl.config.buildable import NO_COMPRESSOR
from vfl.config.mechanisms import MECHANISMS, mechanisms_reading, mechanisms_that, naming
from vfl.config.schema import RunConfig
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
from vfl.schedules import SCHEDULES


@dataclass(frozen=True)
class Applies:
    """A field that is used only when ``when`` holds of its section.

    Attributes:
        key: The field, relative to the section (dotted for a nested section's field).
        when: Whether it applies, given the section.
        needs: What makes it apply, in words (``train.optimizer.lr_schedule 'step' or
            'exponential'``).
    """

    key: str
    when: Callable[[Any], bool]
    needs: str


def _accepts(link: CompressorConfig, parameter: str) -> bool:
    """Whether the link's compressor takes ``parameter`` (lazily: the registry needs torch)."""
    if link.name == NO_COMPRESSOR:
        return False
    from vfl.compress.registry import COMPRESSORS, parameters

    return link.name not in COMPRESSORS or parameter in parameters(link.name)


def _selects(link: CompressorConfig) -> bool:
    """Whether the link's compressor selects components (top-k): ``select`` steers it."""
    if link.name == NO_COMPRESSOR:
        return False
    from vfl.compress.registry import COMPRESSORS

    registered = COMPRESSORS.get(link.name)
    return registered is None or registered.selects


def _bit_schedule_reads(key: str) -> Callable[[CompressorConfig], bool]:
    return lambda link: key in SCHEDULES[link.schedule].bit_keys


def _ratio_kind_reads(key: str) -> Callable[[RatioScheduleConfig], bool]:
    return lambda schedule: key in SCHEDULES[schedule.kind].ratio_keys


def _kinds_reading(key: str) -> str:
    kinds = [name for name, kind in SCHEDULES.items() if key in kind.ratio_keys]
    return "with kind = " + " or ".join(repr(kind) for kind in kinds)


def _bits_apply(link: CompressorConfig) -> bool:
    by_ratio = link.ratio > 0 and _accepts(link, "ratio")
    return _accepts(link, "bits") and not by_ratio


def _prunes(lightweight: LightweightConfig) -> bool:
    return not lightweight.alpha.is_zero or any(not e.alpha.is_zero for e in lightweight.party)


def _noised(config: RunConfig) -> bool:
    return MECHANISMS[config.privacy.mechanism].noises or config.privacy.gradient_noise.enabled


def _mechanism_reads(key: str) -> Applies:
    reading = mechanisms_reading(key)
    return Applies(
        key,
        lambda p: key in MECHANISMS[p.mechanism].reads,
        "with mechanism = " + " or ".join(repr(name) for name in reading),
    )


def _attack(name: str) -> Callable[[AttackConfig], bool]:
    return lambda attack: attack.name == name


_PBM = f"with {naming(mechanisms_that('noises'))}"
_METRIC = "with a target.metric (time to target)"

APPLICABILITY: dict[type, tuple[Applies, ...]] = {
    OptimizerConfig: (
        Applies("momentum", lambda o: o.name == "sgd", "with name = 'sgd'"),
        Applies(
            "lr_gamma",
            lambda o: o.lr_schedule in ("step", "exponential"),
            "with lr_schedule = 'step' or 'exponential'",
        ),
        Applies("lr_step_epochs", lambda o: o.lr_schedule == "step", "with lr_schedule = 'step'"),
    ),
    TrainConfig: (Applies("checkpoint_every", lambda t: t.checkpoint, "with checkpoint = true"),),
    BottomConfig: (
        Applies("channels", lambda b: b.kind == "cnn", "with kind = 'cnn'"),
        Applies(
            "activation",
            lambda b: b.kind == "cnn" or bool(b.hidden),
            "between layers: with hidden layers (or kind = 'cnn')",
        ),
    ),
    HeadConfig: (
        Applies(
            "activation",
            lambda h: h.top == "mlp" and bool(h.hidden),
            "between layers: with top = 'mlp' and hidden layers",
        ),
    ),
    PartitionConfig: (Applies("seed", lambda p: p.scheme == "random", "with scheme = 'random'"),),
    TargetConfig: (
        Applies("value", lambda t: bool(t.metric), "with a metric"),
        Applies("compute_ms", lambda t: bool(t.metric), _METRIC),
        Applies("latencies_ms", lambda t: bool(t.metric), _METRIC),
    ),
    CompressorConfig: (
        Applies("bits", _bits_apply, "with a quantizer, or 'topk' without a ratio"),
        Applies("range", lambda c: _accepts(c, "low"), "with a compressor that takes a range"),
        Applies(
            "low",
            lambda c: c.range == "fixed" and _accepts(c, "low"),
            "with a compressor that takes a range, and range = 'fixed'",
        ),
        Applies(
            "high",
            lambda c: c.range == "fixed" and _accepts(c, "high"),
            "with a compressor that takes a range, and range = 'fixed'",
        ),
        Applies("ratio", lambda c: _accepts(c, "ratio"), "with a compressor that takes a ratio"),
        Applies("select", _selects, "with a compressor that selects components ('topk')"),
        Applies("per_row", lambda c: _accepts(c, "per_row"), "with a compressor that takes it"),
        Applies(
            "schedule", _bits_apply, "where bits apply: a quantizer, or 'topk' without a ratio"
        ),
        Applies("steps", _bit_schedule_reads("steps"), "with a schedule that reads steps"),
    ),
    PrivacyConfig: (
        *(
            _mechanism_reads(key)
            for key in dict.fromkeys(key for _, entry in MECHANISMS.items() for key in entry.reads)
        ),
    ),
    GradientNoiseConfig: (Applies("clip", lambda g: g.enabled, "with noise_multiplier > 0"),),
    RatioScheduleConfig: tuple(
        Applies(key, _ratio_kind_reads(key), _kinds_reading(key))
        for key in (f.name for f in dataclasses.fields(RatioScheduleConfig) if f.name != "kind")
    ),
    LightweightConfig: (
        Applies("prune_at", _prunes, "when a party prunes (alpha above 0 in some round)"),
    ),
    AttackConfig: (
        Applies("role", lambda a: a.name != NO_ATTACK, "with an attack name"),
        Applies("party", lambda a: a.name != NO_ATTACK, "with an attack name"),
        *(
            Applies(key, _attack(name), f"with name = {name!r}")
            for name, entry in ATTACKS.items()
            for key in entry.setting_keys()
        ),
    ),
    RunConfig: (
        Applies("privacy.randomness", _noised, f"{_PBM} or privacy.gradient_noise"),
        Applies("privacy.delta", _noised, f"{_PBM} or privacy.gradient_noise"),
        Applies(
            "compress.evaluation",
            lambda c: (
                not MECHANISMS[c.privacy.mechanism].sums_only
                and c.compress.embedding.name != NO_COMPRESSOR
            ),
            "with an embedding compressor and without PBM (whose evaluations are summed securely)",
        ),
        Applies(
            "protocol.proximal_mu",
            lambda c: c.protocol.local_steps > 1,
            "with protocol.local_steps > 1 (the first local step starts at the anchor)",
        ),
    ),
}
"""Every field that applies only under other settings, by the section class that holds it.

``privacy.secure_aggregation = 'on'`` without PBM has a rule of its own with a better message,
and ``'off'`` without PBM is what ``'auto'`` means there, so it is not listed."""


def inapplicable(section: object) -> list[tuple[str, object, object, Applies]]:
    """Each field of ``section`` set away from its default where it does not apply.

    As ``(key, value, default, entry)``; fields of its sub-sections are theirs to report.
    """
    found = []
    for entry in APPLICABILITY.get(type(section), ()):
        value, default = value_and_default(section, entry.key)
        if value != default and not entry.when(section):
            found.append((entry.key, value, default, entry))
    return found


def value_and_default(section: object, key: str) -> tuple[object, object]:
    """The value of the dotted ``key`` in ``section`` and its field's default."""
    *path, name = key.split(".")
    holder: object = section
    for part in path:
        holder = getattr(holder, part)
    (field,) = (f for f in dataclasses.fields(holder) if f.name == name)  # type: ignore[arg-type]
    factory = field.default_factory
    if field.default is dataclasses.MISSING and callable(factory):
        return getattr(holder, name), factory()
    return getattr(holder, name), field.default
