"""The run config's plain sections: data, partition, model, training, target, output.

Each section declares its fields' valid ranges next to the fields (``vfl.config.fields``);
every rule between fields lives in ``vfl.config.rules``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from vfl.config.arguments import MAX_THREADS
from vfl.config.fields import Each, NonEmpty, OneOf, Range, Satisfies
from vfl.config.section import Section

PartitionScheme = Literal[
    "halves", "quadrants", "strips", "grid", "columns", "contiguous", "random"
]
Activation = Literal["relu", "tanh", "sigmoid", "gelu"]
OutputActivation = Literal["none", "relu", "tanh", "sigmoid"]
TARGET_METRICS = ("", "test_accuracy", "test_loss", "test_f1", "test_auc")

Widths = Annotated[tuple[int, ...], Each(Range(ge=1), items="widths")]


def _two_positive(widths: tuple[int, ...]) -> bool:
    return len(widths) == 2 and all(width >= 1 for width in widths)


@dataclass(frozen=True)
class DataConfig(Section):
    """Which data set to load. A key the chosen data set does not read must keep its default.

    Attributes:
        name: A registry name (``vfl data list``) or ``"table"`` for a CSV/Parquet file.
        path: For ``table``: the file. For registry data sets: an optional folder that holds
            the files instead of the cache, or one of those files (``default-credit``: its CSV
            under any name).
        test_path: For ``table``: an optional separate test file.
        label: For ``table``: the label column.
        id_column: For ``table``: an optional sample-ID column.
        test_fraction: For sources without a defined split (``table`` without ``test_path``,
            ``default-credit``): the seeded test share.
        bad_numbers: For ``table`` and ``default-credit``: what a cell that is not a number is
            in a column whose filled cells are at least 95 % numbers: ``error`` stops with the
            file, column, line and value; ``missing`` reads it as a missing value (imputed and
            flagged like an empty cell).
        max_train_samples: Use a seeded subsample of this many training rows (0 = all).
        max_test_samples: Use a seeded subsample of this many test rows (0 = all).
        subsample_seed: The seed of those subsamples (independent of ``train.seed``, so that
            seeds vary training only); another value draws other rows.
        positive_classes: Make the task binary: these class indices become class 1 and every
            other class 0 (e.g. ``[1, 3, 5, 7, 9]`` for odd MNIST digits); empty keeps the
            classes.
    """

    name: Annotated[str, NonEmpty("must name a data set; see `vfl data list`")] = "mnist"
    path: str = ""
    test_path: str = ""
    label: str = ""
    id_column: str = ""
    test_fraction: Annotated[float, Range(gt=0, lt=1)] = 0.2
    bad_numbers: Literal["error", "missing"] = "error"
    max_train_samples: Annotated[int, Range(ge=0, note="0 = all")] = 0
    max_test_samples: Annotated[int, Range(ge=0, note="0 = all")] = 0
    subsample_seed: Annotated[int, Range(ge=0)] = 0
    positive_classes: tuple[int, ...] = ()


@dataclass(frozen=True)
class PartitionConfig(Section):
    """How features are split between parties.

    Attributes:
        scheme: Images: ``halves`` (2 parties, left/right), ``quadrants`` (4), ``strips``
            (``num_parties`` vertical strips), ``grid`` (``grid = [rows, cols]`` cells, e.g.
            ``[2, 1]`` for top/bottom halves). Tables: ``columns`` (explicit ``groups``),
            ``contiguous`` blocks, or a seeded ``random`` split of the original columns.
        num_parties: Number of parties M.
        groups: For ``columns``: one list of column names per party (original or encoded names).
        seed: For ``random``.
        grid: For ``grid``: ``[rows, cols]`` with ``rows * cols = num_parties``; parties are
            numbered row by row from the top left.
    """

    scheme: PartitionScheme = "quadrants"
    num_parties: Annotated[int, Range(ge=1)] = 4
    groups: tuple[tuple[str, ...], ...] = ()
    seed: int = 0
    grid: Annotated[tuple[int, ...], Each(Range(ge=1))] = ()


@dataclass(frozen=True)
class BottomConfig(Section):
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
    hidden: Widths = (128,)
    embedding_dim: Annotated[int, Range(ge=1)] = 64
    channels: Annotated[
        tuple[int, ...],
        Satisfies(_two_positive, "must be two positive conv widths", "two widths >= 1"),
    ] = (16, 32)
    activation: Activation = "relu"
    output_activation: OutputActivation = "none"


@dataclass(frozen=True)
class HeadConfig(Section):
    """The server's head.

    Attributes:
        fusion: ``concat`` the embeddings, ``sum`` them, or take their ``mean``.
        hidden: Hidden widths of the MLP after fusion; empty for a linear head.
        activation: Activation between hidden layers.
        top: ``mlp``: a trainable model after the fusion (linear when ``hidden`` is empty);
            ``none``: no trainable model, the parties' outputs summed or averaged are the
            logits (needs ``fusion`` sum or mean and ``model.bottom.embedding_dim`` equal to the
            task's logits: 1 for a binary task, else the number of classes).
    """

    fusion: Literal["concat", "sum", "mean"] = "concat"
    hidden: Widths = ()
    activation: Activation = "relu"
    top: Literal["mlp", "none"] = "mlp"


@dataclass(frozen=True)
class ModelConfig(Section):
    """Bottom and head models."""

    bottom: BottomConfig = field(default_factory=BottomConfig)
    head: HeadConfig = field(default_factory=HeadConfig)


@dataclass(frozen=True)
class OptimizerConfig(Section):
    """The optimizer every role uses for its own parameters.

    Attributes:
        name: ``sgd`` or ``adam``.
        lr: Learning rate.
        momentum: SGD momentum.
        weight_decay: L2 penalty.
        fused: Use torch's fused update kernels (one kernel per parameter tensor instead of a
            Python loop of elementwise ops); the same update up to float rounding, and faster.
        lr_schedule: Per round ``t``: ``constant``, or ``inverse_sqrt``: ``lr / sqrt(t + 1)``
            (FedBCD's step size). Per epoch ``e``: ``step``: ``lr * lr_gamma^floor(e /
            lr_step_epochs)``, or ``exponential``: ``lr * lr_gamma^e``. Constant within a round.
        lr_gamma: The decay factor of the ``step`` and ``exponential`` schedules.
        lr_step_epochs: Epochs between two decays of the ``step`` schedule.
    """

    name: Literal["sgd", "adam"] = "adam"
    lr: Annotated[float, Range(gt=0)] = 1e-3
    momentum: Annotated[float, Range(ge=0, lt=1)] = 0.0
    weight_decay: Annotated[float, Range(ge=0)] = 0.0
    fused: bool = True
    lr_schedule: Literal["constant", "inverse_sqrt", "step", "exponential"] = "constant"
    lr_gamma: Annotated[float, Range(gt=0, le=1)] = 0.1
    lr_step_epochs: Annotated[int, Range(ge=1)] = 1


@dataclass(frozen=True)
class TrainConfig(Section):
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
        checkpoint_every: Also write one every this many rounds within epochs, so that a long
            epoch can be resumed from its middle (0: at epoch ends only). A run stopped by
            SIGINT or SIGTERM writes one after its current round either way.
        eval_at_start: Evaluate the untrained model first (epoch 0 of ``metrics.jsonl``), so that
            curves and costs-to-target start from zero traffic.
        eval_every: Also evaluate every this many rounds within epochs (0: after each epoch
            only); for rounds-to-target at round granularity.
        threads: CPU threads for torch's operations (0: torch's default), set before the first
            tensor is made.
        device: Where the models train: ``cpu``, ``cuda``, ``mps``, or ``auto`` (CUDA, then
            MPS, then the CPU). Tensors cross to host memory only at the wire. A resumed run
            may change it (a run saved on CUDA resumes on the CPU); bundles load on the CPU.
            ``cuda`` is not verified on a GPU in this session (no GPU lent, 2026-11-27): every
            path passes on a CUDA device the CPU plays (``tests/device``), and ``make
            gpu-check`` checks them on a real one (docs/benchmarks.md).
    """

    epochs: Annotated[int, Range(ge=1)] = 5
    batch_size: Annotated[int, Range(ge=1)] = 128
    eval_batch_size: Annotated[int, Range(ge=1)] = 2048
    shuffle: bool = True
    drop_last: bool = False
    seed: Annotated[int, Range(ge=0)] = 0
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    checkpoint: bool = True
    checkpoint_every: Annotated[int, Range(ge=0, note="0 = at epoch ends only")] = 0
    eval_at_start: bool = True
    eval_every: Annotated[int, Range(ge=0)] = 0
    threads: Annotated[int, Range(ge=0, le=MAX_THREADS, note="0 = torch's default")] = 0
    device: Literal["auto", "cpu", "cuda", "mps"] = "cpu"


@dataclass(frozen=True)
class TargetConfig(Section):
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

    metric: Annotated[str, OneOf(TARGET_METRICS)] = ""
    value: float = 0.0
    compute_ms: Annotated[float, Range(ge=0)] = 10.0
    latencies_ms: Annotated[tuple[float, ...], Each(Range(ge=0))] = (1.0, 10.0, 50.0, 200.0)
    stop: bool = False


@dataclass(frozen=True)
class OutputConfig(Section):
    """Where results go.

    Attributes:
        dir: Parent directory of run directories (a run config's: relative to the working
            directory; RUN.toml's: to its own folder).
        name: Run directory name; empty for ``<config stem>-<timestamp>``.
        progress: On a terminal, show a bar of each epoch's rounds with their rate and running
            loss. The line per epoch shows either way; ``--quiet`` hides both.
        bundle: At the end of training, export every role's model bundle into
            ``RUN_DIR/bundle/`` (for ``vfl predict``, ``vfl serve`` and ``vfl.load_model``).
        tensorboard: Also write every ``metrics.jsonl`` record as TensorBoard scalars into
            ``RUN_DIR/tensorboard/`` (step: the round; needs the ``vfl[tracking]`` extra);
            view with ``tensorboard --logdir runs``.
    """

    dir: str = "runs"
    name: str = ""
    progress: bool = True
    bundle: bool = True
    tensorboard: bool = False
