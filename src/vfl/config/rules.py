"""Every cross-field rule of the run config: here and in the other ``rules_*`` modules.

A rule is registered for one section class with ``@rule(Cls)`` and runs whenever such a section
is built, after the field constraints declared next to its fields. Keys are relative to the
section (``from_mapping`` prefixes its path); ``RunConfig`` rules name full dotted keys.

Some rules build what a section describes (a compressor, a bit schedule, a ratio schedule) once
(``vfl.config.buildable``), so that a config the run could not build fails when it is loaded,
not after the data is. They import the torch-backed modules lazily and only for non-default
settings, so ``import vfl.config`` and a default config stay free of torch.

Rules that need the data (``check_target_metric``) are functions the run calls right after it
loads the data, before anything is written.
"""

from __future__ import annotations

import dataclasses

from vfl.config import rules_by_protocol as rules_by_protocol  # first: what protocols read
from vfl.config import rules_privacy as rules_privacy  # registers the privacy rules
from vfl.config import rules_roles as rules_roles  # registers the rules on roles
from vfl.config.applicability import inapplicable
from vfl.config.buildable import (
    NO_COMPRESSOR,
    check_bit_schedule,
    check_compressor,
    check_ratio_schedule,
    registered_compressors,
)
from vfl.config.fields import finite, show
from vfl.config.io import FieldError, check
from vfl.config.protocols import ProtocolConfig
from vfl.config.saved import reading_saved
from vfl.config.schema import RunConfig
from vfl.config.section import Section, rule
from vfl.config.sections import (
    TARGET_METRICS,
    DataConfig,
    HeadConfig,
    PartitionConfig,
    TargetConfig,
)
from vfl.config.stages import CompressorConfig, LightweightConfig, RatioScheduleConfig
from vfl.schedules import SCHEDULES

FIXED_PARTIES = {"halves": 2, "quadrants": 4}
"""Partition schemes that make a fixed number of parties."""
BINARY_METRICS = ("test_f1", "test_auc")
"""Metrics only a binary task reports (F1 and ROC-AUC of the positive class)."""


@rule(Section)
def _numbers_are_finite(section: Section) -> None:
    """No NaN or infinity in any float field of any section, ranged or not."""
    for field in dataclasses.fields(section):  # type: ignore[arg-type]
        value = getattr(section, field.name)
        if not finite(value):
            what = "be a finite number" if isinstance(value, float) else "hold finite numbers only"
            raise FieldError(field.name, f"must {what}, got {show(value)}")


@rule(Section)
def _settings_apply(section: Section) -> None:
    """A field set away from its default where it does not apply is refused, not ignored.

    ``vfl.config.applicability.APPLICABILITY`` lists every such field with what makes it
    apply; a config vfl wrote earlier is read ``with saved_settings()`` instead.
    """
    if reading_saved():
        return
    for key, value, default, entry in inapplicable(section):
        raise FieldError(
            key,
            f"{show(value)} does not apply: it is used only {entry.needs}; remove it (its"
            f" default is {show(default)}) or set what makes it apply",
        )


def check_target_metric(metric: str, num_classes: int) -> None:
    """Refuse a target metric the task does not report (known once the data is loaded).

    Raises:
        ConfigError: naming ``target.metric``, the task and the metrics it has.
    """
    if metric in BINARY_METRICS and num_classes != 2:
        valid = ", ".join(repr(m) for m in TARGET_METRICS if m and m not in BINARY_METRICS)
        raise FieldError(
            "target.metric",
            f"{metric!r} is reported for binary tasks only, and this data set has {num_classes}"
            f" classes: use {valid}, or make the task binary with data.positive_classes",
        )


@rule(DataConfig)
def _table_needs_path_and_label(data: DataConfig) -> None:
    check(data.name != "table" or bool(data.path), "path", "name='table' needs a file path")
    check(data.name != "table" or bool(data.label), "label", "name='table' needs a label")


@rule(DataConfig)
def _subsample_seed_needs_a_subsample(data: DataConfig) -> None:
    subsampled = data.max_train_samples > 0 or data.max_test_samples > 0
    check(
        data.subsample_seed == 0 or subsampled,
        "subsample_seed",
        f"{data.subsample_seed} draws nothing without a subsample: set max_train_samples or"
        " max_test_samples too (or leave subsample_seed at 0)",
    )


@rule(PartitionConfig)
def _scheme_fixes_party_count(partition: PartitionConfig) -> None:
    fixed = FIXED_PARTIES.get(partition.scheme)
    check(
        fixed is None or partition.num_parties == fixed,
        "num_parties",
        f"scheme {partition.scheme!r} makes {fixed} parties, got {partition.num_parties}",
    )


@rule(HeadConfig)
def _no_top_model_needs_a_summing_fusion(head: HeadConfig) -> None:
    if head.top == "none":
        check(
            head.fusion in ("sum", "mean"),
            "fusion",
            f"top = 'none' adds the parties' logits: use fusion 'sum' or 'mean', not"
            f" {head.fusion!r}",
        )
        check(
            not head.hidden, "hidden", "top = 'none' has no model after the fusion: leave it empty"
        )


@rule(PartitionConfig)
def _grid_covers_the_parties(partition: PartitionConfig) -> None:
    if partition.scheme != "grid":
        check(not partition.grid, "grid", f"only used with scheme 'grid', not {partition.scheme!r}")
        return
    check(
        len(partition.grid) == 2 and partition.grid[0] * partition.grid[1] == partition.num_parties,
        "grid",
        f"must be [rows, cols] with rows * cols = num_parties ({partition.num_parties}), got"
        f" {list(partition.grid)}",
    )


@rule(PartitionConfig)
def _groups_go_with_columns(partition: PartitionConfig) -> None:
    if partition.scheme == "columns":
        check(
            len(partition.groups) == partition.num_parties,
            "groups",
            f"scheme 'columns' needs one group per party ({partition.num_parties}), got"
            f" {len(partition.groups)}",
        )
    else:
        check(
            not partition.groups,
            "groups",
            f"only used with scheme 'columns', not {partition.scheme!r}",
        )


@rule(ProtocolConfig)
def _sequential_needs_private_labels(protocol: ProtocolConfig) -> None:
    check(
        protocol.schedule == "parallel" or protocol.labels == "private",
        "schedule",
        "'sequential' needs protocol.labels = 'private'",
    )


@rule(TargetConfig)
def _stop_needs_a_metric(target: TargetConfig) -> None:
    check(not target.stop or bool(target.metric), "stop", "needs a target metric")


@rule(CompressorConfig)
def _fixed_range_is_ordered(link: CompressorConfig) -> None:
    check(link.low < link.high, "high", f"must exceed low ({link.low}), got {link.high}")


@rule(CompressorConfig)
def _steps_schedule_has_steps(link: CompressorConfig) -> None:
    check(
        "steps" not in SCHEDULES[link.schedule].bit_keys or bool(link.steps),
        "steps",
        f"schedule {link.schedule!r} needs [[round, bits], ...] pairs",
    )


@rule(CompressorConfig)
def _compressor_is_registered(link: CompressorConfig) -> None:
    if link.name == NO_COMPRESSOR:
        return
    valid = registered_compressors()
    check(
        link.name in valid,
        "name",
        f"must be one of {', '.join(map(repr, valid))}; got {link.name!r}",
    )


LIST_KEYS = {"steps": "[[round, ratio], ...] pairs", "values": "one ratio per round"}
"""The list keys of a ratio schedule, each with what it must hold when the kind reads it."""


@rule(RatioScheduleConfig)
def _read_lists_are_given(schedule: RatioScheduleConfig) -> None:
    for key in SCHEDULES[schedule.kind].ratio_keys:
        if key in LIST_KEYS:
            check(
                bool(getattr(schedule, key)),
                key,
                f"kind {schedule.kind!r} needs {LIST_KEYS[key]}",
            )


@rule(RatioScheduleConfig)
def _ratio_schedule_builds(schedule: RatioScheduleConfig) -> None:
    if not SCHEDULES[schedule.kind].constant:
        check_ratio_schedule(schedule)


@rule(LightweightConfig)
def _parties_listed_once(lightweight: LightweightConfig) -> None:
    ids = [entry.party for entry in lightweight.party]
    check(len(ids) == len(set(ids)), "party", f"lists a party twice: {ids}")


@rule(RunConfig)
def _compressors_build(config: RunConfig) -> None:
    """Last, so that a link the run does not use is reported as such, not as unbuildable."""
    for name in ("embedding", "server_model", "gradient"):
        link = getattr(config.compress, name)
        if link.name != NO_COMPRESSOR:
            check_compressor(link, f"compress.{name}")
            check_bit_schedule(link, f"compress.{name}")
