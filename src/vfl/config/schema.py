"""Run configuration: frozen dataclasses, one per concern, validated eagerly.

A run is described by a TOML file whose tables mirror these classes (``[data]``, ``[partition]``,
``[model.bottom]``, ``[model.head]``, ``[train]``, ``[train.optimizer]``, ``[protocol]``,
``[output]``). ``load_config`` applies ``--set key=value`` overrides and validates the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from vfl.config.io import check, from_mapping, merge, parse_overrides, read_toml

PartitionScheme = Literal["halves", "quadrants", "strips", "columns", "contiguous", "random"]
Activation = Literal["relu", "tanh", "sigmoid", "gelu"]
OutputActivation = Literal["none", "relu", "tanh", "sigmoid"]


@dataclass(frozen=True)
class DataConfig:
    """Which data set to load.

    Attributes:
        name: A registry name (``vfl data list``) or ``"table"`` for a CSV/Parquet file.
        path: For ``table``: the file. For registry data sets: an optional directory that holds
            the files instead of the cache.
        test_path: For ``table``: an optional separate test file.
        label: For ``table``: the label column.
        id_column: For ``table``: an optional sample-ID column.
        test_fraction: For sources without a defined split: the seeded test share.
        max_train_samples: Use a seeded subsample of this many training rows (0 = all).
        max_test_samples: Use a seeded subsample of this many test rows (0 = all).
        positive_classes: Make the task binary: these class indices become class 1 and every
            other class 0 (e.g. ``[1, 3, 5, 7, 9]`` for odd MNIST digits); empty keeps the
            classes.
    """

    name: str = "mnist"
    path: str = ""
    test_path: str = ""
    label: str = ""
    id_column: str = ""
    test_fraction: float = 0.2
    max_train_samples: int = 0
    max_test_samples: int = 0
    positive_classes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        check(bool(self.name), "name", "must name a data set; see `vfl data list`")
        check(self.name != "table" or bool(self.path), "path", "name='table' needs a file path")
        check(self.name != "table" or bool(self.label), "label", "name='table' needs a label")
        check(
            0 < self.test_fraction < 1,
            "test_fraction",
            f"must lie in (0, 1), got {self.test_fraction}",
        )
        check(
            self.max_train_samples >= 0,
            "max_train_samples",
            f"must be >= 0 (0 = all), got {self.max_train_samples}",
        )
        check(
            self.max_test_samples >= 0,
            "max_test_samples",
            f"must be >= 0 (0 = all), got {self.max_test_samples}",
        )


@dataclass(frozen=True)
class PartitionConfig:
    """How features are split between parties.

    Attributes:
        scheme: Images: ``halves`` (2 parties, left/right), ``quadrants`` (4), ``strips``
            (``num_parties`` vertical strips). Tables: ``columns`` (explicit ``groups``),
            ``contiguous`` blocks, or a seeded ``random`` split of the original columns.
        num_parties: Number of parties M.
        groups: For ``columns``: one list of column names per party (original or encoded names).
        seed: For ``random``.
    """

    scheme: PartitionScheme = "quadrants"
    num_parties: int = 4
    groups: tuple[tuple[str, ...], ...] = ()
    seed: int = 0

    def __post_init__(self) -> None:
        check(self.num_parties >= 1, "num_parties", f"must be >= 1, got {self.num_parties}")
        fixed = {"halves": 2, "quadrants": 4}
        if self.scheme in fixed:
            check(
                self.num_parties == fixed[self.scheme],
                "num_parties",
                f"scheme {self.scheme!r} makes {fixed[self.scheme]} parties, got"
                f" {self.num_parties}",
            )
        if self.scheme == "columns":
            check(
                len(self.groups) == self.num_parties,
                "groups",
                f"scheme 'columns' needs one group per party ({self.num_parties}), got"
                f" {len(self.groups)}",
            )
        else:
            check(
                not self.groups, "groups", f"only used with scheme 'columns', not {self.scheme!r}"
            )


@dataclass(frozen=True)
class BottomConfig:
    """Every party's bottom (embedding) model.

    Attributes:
        kind: ``mlp`` or ``cnn`` (``SmallCNN``, image blocks only).
        hidden: Hidden layer widths (for ``cnn``: fully connected layers after the convolutions).
        embedding_dim: Embedding width P each party sends.
        channels: For ``cnn``: the two convolution widths.
        activation: Activation between layers.
        output_activation: Activation on the embedding (``tanh`` bounds it to [-1, 1]).
    """

    kind: Literal["mlp", "cnn"] = "mlp"
    hidden: tuple[int, ...] = (128,)
    embedding_dim: int = 64
    channels: tuple[int, ...] = (16, 32)
    activation: Activation = "relu"
    output_activation: OutputActivation = "none"

    def __post_init__(self) -> None:
        check(self.embedding_dim >= 1, "embedding_dim", f"must be >= 1, got {self.embedding_dim}")
        check(all(w >= 1 for w in self.hidden), "hidden", f"widths must be >= 1: {self.hidden}")
        check(
            len(self.channels) == 2 and all(c >= 1 for c in self.channels),
            "channels",
            f"must be two positive conv widths, got {list(self.channels)}",
        )


@dataclass(frozen=True)
class HeadConfig:
    """The server's head.

    Attributes:
        fusion: ``concat`` the embeddings, or ``sum`` them.
        hidden: Hidden widths of the MLP after fusion; empty for a linear head.
        activation: Activation between hidden layers.
    """

    fusion: Literal["concat", "sum"] = "concat"
    hidden: tuple[int, ...] = ()
    activation: Activation = "relu"

    def __post_init__(self) -> None:
        check(all(w >= 1 for w in self.hidden), "hidden", f"widths must be >= 1: {self.hidden}")


@dataclass(frozen=True)
class ModelConfig:
    """Bottom and head models."""

    bottom: BottomConfig = field(default_factory=BottomConfig)
    head: HeadConfig = field(default_factory=HeadConfig)


@dataclass(frozen=True)
class OptimizerConfig:
    """The optimizer every role uses for its own parameters.

    Attributes:
        name: ``sgd`` or ``adam``.
        lr: Learning rate.
        momentum: SGD momentum.
        weight_decay: L2 penalty.
        fused: Use torch's fused update kernels (one kernel per parameter tensor instead of a
            Python loop of elementwise ops); the same update up to float rounding, and faster.
        lr_schedule: ``constant``, or ``inverse_sqrt``: ``lr / sqrt(t + 1)`` in round ``t``
            (FedBCD's step size; constant within a round).
    """

    name: Literal["sgd", "adam"] = "adam"
    lr: float = 1e-3
    momentum: float = 0.0
    weight_decay: float = 0.0
    fused: bool = True
    lr_schedule: Literal["constant", "inverse_sqrt"] = "constant"

    def __post_init__(self) -> None:
        check(self.lr > 0, "lr", f"must be > 0, got {self.lr}")
        check(0 <= self.momentum < 1, "momentum", f"must lie in [0, 1), got {self.momentum}")
        check(self.weight_decay >= 0, "weight_decay", f"must be >= 0, got {self.weight_decay}")
        check(self.name == "sgd" or self.momentum == 0, "momentum", "applies to sgd only")


@dataclass(frozen=True)
class TrainConfig:
    """The training loop.

    Attributes:
        epochs: Passes over the training split; one round per mini-batch.
        batch_size: Samples per round.
        eval_batch_size: Samples per evaluation request.
        shuffle: Draw a fresh seeded permutation each epoch (else in order).
        drop_last: Leave out each epoch's incomplete last batch (with Q local steps a small
            last batch is over-fitted Q times).
        seed: Seeds model initialization and batch order.
        optimizer: Optimizer settings.
        checkpoint: Write a checkpoint after every epoch (for ``--resume``).
        eval_at_start: Evaluate the untrained model first (epoch 0 of ``metrics.jsonl``), so that
            curves and costs-to-target start from zero traffic.
        eval_every: Also evaluate every this many rounds within epochs (0: after each epoch
            only); for rounds-to-target at round granularity.
    """

    epochs: int = 5
    batch_size: int = 128
    eval_batch_size: int = 2048
    shuffle: bool = True
    drop_last: bool = False
    seed: int = 0
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    checkpoint: bool = True
    eval_at_start: bool = True
    eval_every: int = 0

    def __post_init__(self) -> None:
        check(self.eval_every >= 0, "eval_every", f"must be >= 0, got {self.eval_every}")
        check(self.epochs >= 1, "epochs", f"must be >= 1, got {self.epochs}")
        check(self.batch_size >= 1, "batch_size", f"must be >= 1, got {self.batch_size}")
        check(
            self.eval_batch_size >= 1,
            "eval_batch_size",
            f"must be >= 1, got {self.eval_batch_size}",
        )
        check(self.seed >= 0, "seed", f"must be >= 0, got {self.seed}")


@dataclass(frozen=True)
class ProtocolConfig:
    """Which protocol trains the model.

    Attributes:
        mode: ``vfl``: parties and server exchange messages through the in-process transport,
            every message encoded and counted. ``centralized``: the same combined model trained
            in one process with no messages (the baseline).
        labels: ``private``: only the server holds labels; it returns d loss / d embedding
            (split learning, C-VFL Algorithm 2, FedBCD). ``shared``: every party holds them and
            receives the stale compressed view of the round (C-VFL Algorithm 1; FedBCD's exact
            partial gradient at the stale point).
        local_steps: Q, the local iterations every role takes per round on the round's batch.
        proximal_mu: FedPBCD's proximal weight mu (0 disables the term).
        schedule: ``parallel`` (FedBCD-p: every party steps at once after one exchange) or
            ``sequential`` (FedBCD-s: parties step one after another, each re-sending its
            updated embedding; private labels only).
        active_party: The party (1..M) whose features live with the label holder (FedBCD's
            party K): its exchanges stay in the server's process and cost no bytes. 0 = none.
    """

    mode: Literal["vfl", "centralized"] = "vfl"
    labels: Literal["private", "shared"] = "private"
    local_steps: int = 1
    proximal_mu: float = 0.0
    schedule: Literal["parallel", "sequential"] = "parallel"
    active_party: int = 0

    def __post_init__(self) -> None:
        check(self.local_steps >= 1, "local_steps", f"must be >= 1, got {self.local_steps}")
        check(self.proximal_mu >= 0, "proximal_mu", f"must be >= 0, got {self.proximal_mu}")
        check(
            self.schedule == "parallel" or self.labels == "private",
            "schedule",
            "'sequential' needs protocol.labels = 'private'",
        )
        check(self.active_party >= 0, "active_party", f"must be >= 0, got {self.active_party}")


CompressorName = Literal["none", "identity", "scalar", "lattice", "topk"]


@dataclass(frozen=True)
class CompressorConfig:
    """A compressor on one link (see docs/compression.md).

    Attributes:
        name: ``none`` (plain float32 tensors in the baseline messages), ``identity`` (float32
            in a compressed-payload message), ``scalar`` (dithered uniform quantizer),
            ``lattice`` (dithered 2-D hexagonal lattice), ``topk`` (sparsification).
        bits: ``b``, bits per component (nominal for top-k: ``k = ceil(P b / 32)``).
        range: Quantizers: ``message`` (each message's min and max travel in a header) or
            ``fixed`` (``[low, high]``, e.g. ``[-1, 1]`` for tanh embeddings; values outside
            are clipped).
        low: Lower end of a fixed range.
        high: Upper end of a fixed range.
        ratio: Top-k: the fraction of components kept; 0 derives k from ``bits``.
        select: Top-k: keep the largest ``magnitude`` entries, or the columns with the largest
            previous-step ``gradient`` magnitude (the C-VFL paper's rule).
        per_row: Top-k: one index set per sample instead of one shared by the batch.
        schedule: ``constant`` b, ``steps`` (``steps`` gives ``[round, b]`` pairs), or
            ``diminishing`` (C-VFL section 5.6: b grows so the error falls like 1/sqrt(t)).
        steps: For ``steps``: ``[[0, 2], [500, 3]]`` is b = 2 until round 499, then 3.
    """

    name: CompressorName = "none"
    bits: int = 32
    range: Literal["message", "fixed"] = "message"
    low: float = -1.0
    high: float = 1.0
    ratio: float = 0.0
    select: Literal["magnitude", "gradient"] = "magnitude"
    per_row: bool = False
    schedule: Literal["constant", "steps", "diminishing"] = "constant"
    steps: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        check(1 <= self.bits <= 32, "bits", f"must lie in 1..32, got {self.bits}")
        check(self.low < self.high, "high", f"must exceed low ({self.low}), got {self.high}")
        check(0 <= self.ratio <= 1, "ratio", f"must lie in [0, 1], got {self.ratio}")
        check(
            self.schedule != "steps" or bool(self.steps),
            "steps",
            "schedule 'steps' needs [[round, bits], ...] pairs",
        )
        check(
            all(len(pair) == 2 for pair in self.steps),
            "steps",
            f"must be [round, bits] pairs, got {[list(p) for p in self.steps]}",
        )


@dataclass(frozen=True)
class CompressConfig:
    """Compression on each link.

    Attributes:
        embedding: C_1..C_M, the parties' embeddings to the server.
        server_model: C_0, the server model broadcast with shared labels (``none``: use the
            embedding compressor, as the C-VFL authors' code does).
        gradient: The gradients the server returns with private labels.
    """

    embedding: CompressorConfig = field(default_factory=CompressorConfig)
    server_model: CompressorConfig = field(default_factory=CompressorConfig)
    gradient: CompressorConfig = field(default_factory=CompressorConfig)


@dataclass(frozen=True)
class PrivacyConfig:
    """Differential privacy of the embeddings: the Poisson Binomial Mechanism (VFL-PBM).

    Attributes:
        mechanism: ``none``, or ``pbm``: every party sends, per coordinate, a count
            q ~ Binomial(trials, 1/2 + (beta/clip) x) instead of its embedding x; the server
            estimates the SUM of the embeddings (needs ``model.head.fusion = "sum"`` and tanh
            embeddings).
        trials: b, the binomial trials per coordinate.
        beta: beta in (0, 1/4]: how far the success probability moves with x.
        clip: C, the bound on |x| (1 for tanh embeddings).
        secure_aggregation: ``on`` masks the counts pairwise (X25519, HKDF, ChaCha20,
            mod 2^k) so the server learns only their sum, and sums evaluation embeddings
            securely too; ``off`` sends each party's counts in the clear; ``auto`` is ``on``
            with PBM and ``off`` without.
        delta: The delta at which epsilon is reported. Each training sample is used once per
            shuffled epoch, so the accountant composes one release per sample per epoch.
        eval_fraction_bits: f, the fixed-point precision of securely summed evaluation
            embeddings (steps of clip / 2^(f-1)).
        secure_rng: Draw the mechanism's randomness from the operating system (as a deployment
            must) instead of a seeded generator (reproducible experiments).
    """

    mechanism: Literal["none", "pbm"] = "none"
    trials: int = 16
    beta: float = 0.05
    clip: float = 1.0
    secure_aggregation: Literal["auto", "on", "off"] = "auto"
    delta: float = 1e-5
    eval_fraction_bits: int = 16
    secure_rng: bool = False

    def __post_init__(self) -> None:
        check(self.trials >= 1, "trials", f"must be >= 1, got {self.trials}")
        check(0 < self.beta <= 0.25, "beta", f"must lie in (0, 0.25], got {self.beta}")
        check(self.clip > 0, "clip", f"must be > 0, got {self.clip}")
        check(0 < self.delta < 1, "delta", f"must lie in (0, 1), got {self.delta}")
        check(
            8 <= self.eval_fraction_bits <= 32,
            "eval_fraction_bits",
            f"must lie in 8..32, got {self.eval_fraction_bits}",
        )


TARGET_METRICS = ("", "test_accuracy", "test_loss", "test_f1", "test_auc")


@dataclass(frozen=True)
class RatioScheduleConfig:
    """A per-round ratio (LVFL's ``α_k^t`` or ``β_k^t``): the fraction removed, in ``[0, 1)``.

    Attributes:
        kind: ``constant`` (``value``), ``steps`` (``steps``: ``[round, ratio]`` pairs, each ratio
            holding from its round on), ``linear`` (from ``start_value`` at ``start_round`` to
            ``end_value`` at ``end_round``), or ``table`` (``values``: one ratio per round, the
            last one holding afterwards). Rounds count from 0.
        value: For ``constant``.
        steps: For ``steps``: ``[[0, 0.0], [40, 0.4]]`` switches 0.4 on at round 40.
        start_round: For ``linear``.
        end_round: For ``linear``.
        start_value: For ``linear``.
        end_value: For ``linear``.
        values: For ``table``.
    """

    kind: Literal["constant", "steps", "linear", "table"] = "constant"
    value: float = 0.0
    steps: tuple[tuple[float, ...], ...] = ()
    start_round: int = 0
    end_round: int = 0
    start_value: float = 0.0
    end_value: float = 0.0
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        check(0 <= self.value < 1, "value", f"must lie in [0, 1), got {self.value}")
        check(
            self.kind != "steps" or bool(self.steps),
            "steps",
            "kind 'steps' needs [[round, ratio], ...] pairs",
        )
        check(
            self.kind != "table" or bool(self.values),
            "values",
            "kind 'table' needs one ratio per round",
        )

    def spec(self) -> dict[str, object]:
        """The schedule as ``vfl.prune.make_schedule`` takes it."""
        if self.kind == "constant":
            return {"kind": "constant", "value": self.value}
        if self.kind == "steps":
            return {"kind": "steps", "steps": [[int(r), float(v)] for r, v in self.steps]}
        if self.kind == "table":
            return {"kind": "table", "values": list(self.values)}
        return {
            "kind": "linear",
            "start_round": self.start_round,
            "end_round": self.end_round,
            "start_value": self.start_value,
            "end_value": self.end_value,
        }

    @property
    def is_zero(self) -> bool:
        """Whether the ratio is 0 in every round."""
        ratios = {
            "constant": (self.value,),
            "steps": tuple(v for _, v in self.steps),
            "table": self.values,
            "linear": (self.start_value, self.end_value),
        }[self.kind]
        return all(r == 0 for r in ratios)


@dataclass(frozen=True)
class PartyLightweightConfig:
    """One party's own schedules (heterogeneous devices), replacing the shared ones.

    Attributes:
        party: The party id, 1..M.
        alpha: Its pruning ratio schedule.
        beta: Its upload sparsification schedule.
    """

    party: int = 0
    alpha: RatioScheduleConfig = field(default_factory=RatioScheduleConfig)
    beta: RatioScheduleConfig = field(default_factory=RatioScheduleConfig)

    def __post_init__(self) -> None:
        check(self.party >= 1, "party", f"must name a party id >= 1, got {self.party}")


@dataclass(frozen=True)
class LightweightConfig:
    """LVFL lightweighting (see docs/lightweighting.md).

    Attributes:
        alpha: Computation: the fraction of filters/neurons pruned from every prunable layer of
            each bottom model, per round, applied progressively (never regrown).
        beta: Communication: the fraction of each upload's entries zeroed (smallest magnitudes
            first), sent as values plus positions; combines with scalar or lattice quantizers.
        party: Per-party schedules (``[[lightweight.party]]`` with ``party``, ``alpha``,
            ``beta``); parties not listed use ``alpha`` and ``beta``.
        prune_at: When a party prunes in a round: ``round_start`` (before it computes the
            round's upload, so upload and local steps use one model; any protocol) or
            ``after_upload`` (the LVFL algorithm's literal order: the upload comes from the
            model before pruning, the local steps train the pruned one; shared labels only).
    """

    alpha: RatioScheduleConfig = field(default_factory=RatioScheduleConfig)
    beta: RatioScheduleConfig = field(default_factory=RatioScheduleConfig)
    party: tuple[PartyLightweightConfig, ...] = ()
    prune_at: Literal["round_start", "after_upload"] = "round_start"

    def __post_init__(self) -> None:
        ids = [entry.party for entry in self.party]
        check(len(ids) == len(set(ids)), "party", f"lists a party twice: {ids}")

    def schedules_of(self, party: int) -> tuple[RatioScheduleConfig, RatioScheduleConfig]:
        """Party ``party``'s (alpha, beta) schedules."""
        for entry in self.party:
            if entry.party == party:
                return entry.alpha, entry.beta
        return self.alpha, self.beta

    @property
    def sparsifies(self) -> bool:
        """Whether any party ever zeroes part of its uploads."""
        return not self.beta.is_zero or any(not e.beta.is_zero for e in self.party)


@dataclass(frozen=True)
class TargetConfig:
    """A metric value whose cost (rounds, bytes, time) the summary reports.

    Attributes:
        metric: ``test_accuracy``, ``test_loss`` (reached when at or below ``value``),
            ``test_f1`` or ``test_auc`` (binary tasks); empty for no target.
        value: The value to reach.
        compute_ms: Time-to-target model (C-VFL section 7): the time of one local step at a
            party, in ms (the paper's 10); 0 uses this run's measured training time per step.
        latencies_ms: Round-trip latencies t_c for which the summary reports
            ``rounds × (Q·t_compute + t_c)``.
        stop: End training at the first evaluation that reaches the target.
    """

    metric: str = ""
    value: float = 0.0
    compute_ms: float = 10.0
    latencies_ms: tuple[float, ...] = (1.0, 10.0, 50.0, 200.0)
    stop: bool = False

    def __post_init__(self) -> None:
        check(
            self.metric in TARGET_METRICS,
            "metric",
            f"must be one of {', '.join(map(repr, TARGET_METRICS))}; got {self.metric!r}",
        )
        check(self.compute_ms >= 0, "compute_ms", f"must be >= 0, got {self.compute_ms}")
        check(not self.stop or bool(self.metric), "stop", "needs a target metric")
        check(
            all(t >= 0 for t in self.latencies_ms),
            "latencies_ms",
            f"must be >= 0, got {list(self.latencies_ms)}",
        )


@dataclass(frozen=True)
class OutputConfig:
    """Where results go.

    Attributes:
        dir: Parent directory of run directories.
        name: Run directory name; empty for ``<config stem>-<timestamp>``.
        progress: Show a progress bar.
    """

    dir: str = "runs"
    name: str = ""
    progress: bool = True


@dataclass(frozen=True)
class RunConfig:
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

    def __post_init__(self) -> None:
        if self.privacy.secure_aggregation == "on":
            check(
                self.model.head.fusion == "sum",
                "model.head.fusion",
                "secure aggregation reveals only the sum of the embeddings: use fusion 'sum',"
                f" not {self.model.head.fusion!r}",
            )
            check(
                self.privacy.mechanism == "pbm",
                "privacy.secure_aggregation",
                "'on' aggregates integer counts: set privacy.mechanism = 'pbm'",
            )
        if self.privacy.mechanism == "pbm":
            _check_pbm(self)
        if self.lightweight.sparsifies:
            _check_sparsify(self)
        check(
            self.lightweight.prune_at == "round_start" or self.protocol.labels == "shared",
            "lightweight.prune_at",
            "'after_upload' needs protocol.labels = 'shared' (with private labels the returned"
            " gradient belongs to the model that computed the upload)",
        )
        for entry in self.lightweight.party:
            check(
                entry.party <= self.partition.num_parties,
                "lightweight.party",
                f"party {entry.party} is not a party; valid: 1..{self.partition.num_parties}",
            )


def _check_sparsify(config: RunConfig) -> None:
    """LVFL sparsification replaces top-k and cannot carry PBM counts."""
    check(
        config.compress.embedding.name != "topk",
        "compress.embedding.name",
        "lightweight.beta already sparsifies the uploads; quantize the kept values with"
        " 'scalar' or 'lattice' instead of 'topk'",
    )
    check(
        config.privacy.mechanism == "none",
        "lightweight.beta",
        "with privacy.mechanism 'pbm' the uploads are PBM counts, which cannot be sparsified",
    )


def _check_pbm(config: RunConfig) -> None:
    """PBM needs sum fusion, bounded embeddings and private labels (VFL-PBM section 4)."""
    check(
        config.model.head.fusion == "sum",
        "model.head.fusion",
        "privacy.mechanism 'pbm' sends counts the server can only sum: use fusion 'sum', not"
        f" {config.model.head.fusion!r}",
    )
    check(
        config.model.bottom.output_activation == "tanh",
        "model.bottom.output_activation",
        "privacy.mechanism 'pbm' needs bounded embeddings: use 'tanh' (|x| <= 1), not"
        f" {config.model.bottom.output_activation!r}",
    )
    check(
        config.privacy.clip >= 1.0,
        "privacy.clip",
        f"tanh embeddings reach 1, so clip must be >= 1, got {config.privacy.clip}",
    )
    check(
        config.protocol.labels == "private",
        "protocol.labels",
        "privacy.mechanism 'pbm' works with labels private to the server",
    )
    check(
        config.protocol.schedule == "parallel",
        "protocol.schedule",
        "privacy.mechanism 'pbm' uses the parallel schedule",
    )
    check(
        config.compress.embedding.name == "none",
        "compress.embedding.name",
        "with privacy.mechanism 'pbm' the uploads are PBM counts; set no embedding compressor",
    )
    check(
        config.protocol.active_party == 0,
        "protocol.active_party",
        "privacy.mechanism 'pbm' protects every party's features: no party can sit with the server",
    )


def load_config(path: Path | None = None, overrides: Sequence[str] = ()) -> RunConfig:
    """Load a run config from TOML (defaults when ``path`` is None) with ``key=value`` overrides.

    Raises:
        ConfigError: naming the offending key and what is valid.
    """
    raw = read_toml(path) if path is not None else {}
    return from_mapping(RunConfig, merge(raw, parse_overrides(overrides)))
