"""Every cross-field rule of the run config, in one place.

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

from vfl.config.applicability import inapplicable, reading_saved
from vfl.config.attack import ATTACKS, NO_ATTACK, AttackConfig, attacks_by
from vfl.config.buildable import (
    NO_COMPRESSOR,
    check_bit_schedule,
    check_compressor,
    check_ratio_schedule,
    registered_compressors,
)
from vfl.config.fields import finite, show
from vfl.config.io import FieldError, check
from vfl.config.mechanisms import MECHANISMS, mechanisms_that, naming
from vfl.config.protocols import AUTO, PROTOCOLS, ProtocolConfig
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
def _secure_aggregation_sums_pbm_counts(config: RunConfig) -> None:
    if config.privacy.secure_aggregation != "on":
        return
    check(
        config.model.head.fusion == "sum",
        "model.head.fusion",
        "secure aggregation reveals only the sum of the embeddings: use fusion 'sum',"
        f" not {config.model.head.fusion!r}",
    )
    check(
        MECHANISMS[config.privacy.mechanism].sums_only,
        "privacy.secure_aggregation",
        f"'on' aggregates integer counts: set {naming(mechanisms_that('sums_only'))}",
    )


@rule(RunConfig)
def _mechanism_fits_the_model(config: RunConfig) -> None:
    """Sums need sum fusion; a bounded mechanism, bounded embeddings (VFL-PBM section 4)."""
    name = config.privacy.mechanism
    entry = MECHANISMS[name]
    if entry.sums_only:
        check(
            config.model.head.fusion == "sum",
            "model.head.fusion",
            f"privacy.mechanism {name!r} sends counts the server can only sum: use fusion"
            f" 'sum', not {config.model.head.fusion!r}",
        )
    if entry.bounded:
        check(
            config.model.bottom.output_activation == "tanh",
            "model.bottom.output_activation",
            f"privacy.mechanism {name!r} needs bounded embeddings: use 'tanh' (|x| <= 1), not"
            f" {config.model.bottom.output_activation!r}",
        )
        check(
            config.privacy.clip >= 1.0,
            "privacy.clip",
            f"tanh embeddings reach 1, so clip must be >= 1, got {config.privacy.clip}",
        )
    _mechanism_fits_the_protocol(config)


def _mechanism_fits_the_protocol(config: RunConfig) -> None:
    name = config.privacy.mechanism
    entry = MECHANISMS[name]
    if entry.protocol:
        check(
            config.protocol.labels == "private",
            "protocol.labels",
            f"privacy.mechanism {name!r} works with labels private to the server",
        )
        check(
            config.protocol.schedule == "parallel",
            "protocol.schedule",
            f"privacy.mechanism {name!r} uses the parallel schedule",
        )
    if entry.sums_only:
        check(
            config.compress.embedding.name == NO_COMPRESSOR,
            "compress.embedding.name",
            f"with privacy.mechanism {name!r} the uploads are PBM counts; set no embedding"
            " compressor",
        )
        check(
            config.protocol.active_party == 0,
            "protocol.active_party",
            f"privacy.mechanism {name!r} protects every party's features: no party can sit with"
            " the server",
        )


@rule(RunConfig)
def _protocol_fits_the_mechanism(config: RunConfig) -> None:
    """A mechanism that asks for a protocol runs under it, and such a protocol only under it."""
    name, mechanism = config.protocol.name, config.privacy.mechanism
    wanted = MECHANISMS[mechanism].protocol
    check(
        not wanted or name in (AUTO, wanted),
        "protocol.name",
        f"privacy.mechanism {mechanism!r} runs under protocol {wanted!r}, not {name!r}",
    )
    entry = PROTOCOLS.get(name)
    asking = tuple(n for n, m in MECHANISMS.items() if m.protocol == name)
    check(
        entry is None or not entry.by_mechanism or wanted == name,
        "protocol.name",
        f"protocol {name!r} runs only under {naming(asking)}, not privacy.mechanism {mechanism!r}",
    )


@rule(RunConfig)
def _check_sparsify(config: RunConfig) -> None:
    """LVFL sparsification replaces top-k and cannot carry PBM counts."""
    if not config.lightweight.sparsifies:
        return
    check(
        config.compress.embedding.name != "topk",
        "compress.embedding.name",
        "lightweight.beta already sparsifies the uploads; quantize the kept values with"
        " 'scalar' or 'lattice' instead of 'topk'",
    )
    name = config.privacy.mechanism
    check(
        not MECHANISMS[name].sums_only,
        "lightweight.beta",
        f"with privacy.mechanism {name!r} the uploads are PBM counts, which cannot be sparsified",
    )


@rule(RunConfig)
def _after_upload_needs_shared_labels(config: RunConfig) -> None:
    check(
        config.lightweight.prune_at == "round_start" or config.protocol.labels == "shared",
        "lightweight.prune_at",
        "'after_upload' needs protocol.labels = 'shared' (with private labels the returned"
        " gradient belongs to the model that computed the upload)",
    )


@rule(RunConfig)
def _parties_exist(config: RunConfig) -> None:
    parties = config.partition.num_parties
    for entry in config.lightweight.party:
        check(
            entry.party <= parties,
            "lightweight.party",
            f"party {entry.party} is not a party; valid: 1..{parties}",
        )
    active = config.protocol.active_party
    check(
        active <= parties,
        "protocol.active_party",
        f"{active} is not a party; valid: 1..{parties} (0: none)",
    )


@rule(RunConfig)
def _links_match_labels(config: RunConfig) -> None:
    """Private labels return gradients; shared labels broadcast the server model instead."""
    compress = config.compress
    if config.protocol.labels == "private":
        check(
            compress.server_model.name == NO_COMPRESSOR,
            "compress.server_model.name",
            "compress.server_model applies to protocol.labels = 'shared' only",
        )
    else:
        check(
            compress.gradient.name == NO_COMPRESSOR,
            "compress.gradient.name",
            "compress.gradient applies to protocol.labels = 'private' only; with shared labels"
            " no gradient is sent",
        )


@rule(AttackConfig)
def _attack_runs_at_its_role(attack: AttackConfig) -> None:
    entry = ATTACKS.get(attack.name)
    role = entry.role if entry is not None else None
    valid = ", ".join(repr(name) for name in attacks_by(attack.role))
    check(
        role is None or role == attack.role,
        "role",
        f"{attack.name!r} is an attack by the {role}, not the {attack.role} (attacks by the"
        f" {attack.role}: {valid})",
    )


@rule(RunConfig)
def _attack_fits_the_run(config: RunConfig) -> None:
    """An attack needs messages to observe, and a party attacker must not hold the labels."""
    attack = config.attack
    if attack.name == NO_ATTACK:
        return
    check(config.protocol.mode == "vfl", "attack.name", "the centralized baseline sends nothing")
    check(
        attack.party <= config.partition.num_parties,
        "attack.party",
        f"{attack.party} is not a party; valid: 1..{config.partition.num_parties}",
    )
    check(
        attack.party != config.protocol.active_party,
        "attack.party",
        f"party {attack.party} is the active party: it sits with the label holder, whose"
        " messages to it never cross a transport",
    )
    check(
        attack.role == "server" or config.protocol.labels == "private",
        "attack.role",
        "with protocol.labels = 'shared' every party holds the labels: nothing to infer",
    )


@rule(RunConfig)
def _gradient_noise_needs_gradients(config: RunConfig) -> None:
    if config.privacy.gradient_noise.enabled:
        check(
            config.protocol.labels == "private" and config.protocol.mode == "vfl",
            "privacy.gradient_noise.noise_multiplier",
            "noises the gradients the label holder sends: needs protocol.mode = 'vfl' and"
            " protocol.labels = 'private'",
        )


@rule(RunConfig)
def _budget_needs_a_mechanism(config: RunConfig) -> None:
    privacy = config.privacy
    spends = MECHANISMS[privacy.mechanism].noises or privacy.gradient_noise.enabled
    check(
        privacy.max_epsilon == 0 or spends,
        "privacy.max_epsilon",
        f"a budget needs a mechanism that spends it: {naming(mechanisms_that('noises'))} or"
        " privacy.gradient_noise.noise_multiplier > 0",
    )


@rule(RunConfig)
def _compressors_build(config: RunConfig) -> None:
    """Last, so that a link the run does not use is reported as such, not as unbuildable."""
    for name in ("embedding", "server_model", "gradient"):
        link = getattr(config.compress, name)
        if link.name != NO_COMPRESSOR:
            check_compressor(link, f"compress.{name}")
            check_bit_schedule(link, f"compress.{name}")
