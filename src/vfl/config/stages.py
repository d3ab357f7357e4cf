"""The run config's pipeline stages: compression, differential privacy, LVFL lightweighting.

Each section declares its fields' valid ranges next to the fields (``vfl.config.fields``);
every rule between fields, and whether a compressor or schedule can be built, lives in
``vfl.config.rules``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

from vfl.config.fields import Each, Range, Registered, Satisfies, pairs
from vfl.config.mechanisms import MECHANISMS, NO_MECHANISM
from vfl.config.section import Section
from vfl.schedules import SCHEDULES, bit_kinds, ratio_kinds, ratio_schedule

Ratio = Annotated[float, Range(ge=0, lt=1)]
Finite = Annotated[float, Satisfies(math.isfinite, "must be a finite number", "finite")]


@dataclass(frozen=True)
class CompressorConfig(Section):
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

    name: str = "none"
    bits: Annotated[int, Range(ge=1, le=32)] = 32
    range: Literal["message", "fixed"] = "message"
    low: Finite = -1.0
    high: Finite = 1.0
    ratio: Annotated[float, Range(ge=0, le=1)] = 0.0
    select: Literal["magnitude", "gradient"] = "magnitude"
    per_row: bool = False
    schedule: Annotated[str, Registered(bit_kinds)] = "constant"
    steps: Annotated[
        tuple[tuple[int, ...], ...], Satisfies(pairs, "must be [round, bits] pairs")
    ] = ()


@dataclass(frozen=True)
class CompressConfig(Section):
    """Compression on each link.

    Attributes:
        embedding: C_1..C_M, the parties' embeddings to the server.
        server_model: C_0, the server model broadcast with shared labels (``none``: use the
            embedding compressor, as the C-VFL authors' code does).
        gradient: The gradients the server returns with private labels.
        evaluation: Whether the parties' evaluation embeddings travel through the embedding
            compressor too (``on``) or as float32 (``off``); ``auto`` is ``on`` in a deployment
            (where evaluation traffic costs as much as any other) and ``off`` in simulation (so
            that the reported metrics are those of the model itself). Not used with PBM, whose
            evaluation embeddings are summed securely in fixed point.
    """

    embedding: CompressorConfig = field(default_factory=CompressorConfig)
    server_model: CompressorConfig = field(default_factory=CompressorConfig)
    gradient: CompressorConfig = field(default_factory=CompressorConfig)
    evaluation: Literal["auto", "on", "off"] = "auto"


@dataclass(frozen=True)
class GradientNoiseConfig(Section):
    """A Gaussian defense of the labels at the label holder (``docs/attacks.md``).

    Attributes:
        noise_multiplier: ``z``: every sample's gradient row is clipped to L2 norm ``clip`` and
            gets ``N(0, (z clip)²)`` noise per coordinate before it is sent; 0 turns it off.
            Each passive party's row gets a noise draw of its own: ``label_epsilon`` counts one
            release per party and epoch (what a coalition of them can pool),
            ``label_epsilon_one_party`` one party's.
        clip: ``C``, the per-sample L2 bound of the gradients sent.
    """

    noise_multiplier: Annotated[float, Range(ge=0, note="0 = off")] = 0.0
    clip: Annotated[float, Range(gt=0)] = 1.0

    @property
    def enabled(self) -> bool:
        """Whether gradients are noised."""
        return self.noise_multiplier > 0


@dataclass(frozen=True)
class PrivacyConfig(Section):
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
            securely too; ``off`` sends each party's counts in the clear (epsilon is then
            that of one party's noise alone, M = 1); ``auto`` is ``on`` with PBM and ``off``
            without.
        delta: The delta at which epsilon is reported. Each training sample is used once per
            shuffled epoch, so the accountant composes one release per sample per epoch.
        eval_fraction_bits: f, the fixed-point precision of securely summed evaluation
            embeddings (steps of clip / 2^(f-1)).
        randomness: Where the mechanism's noise comes from. ``os``: the operating system, so no
            other party can predict it (what the privacy claim needs); ``seeded``: a generator
            seeded from ``train.seed`` (reproducible experiments, but anyone who knows the seed
            can regenerate the noise, so the run is not private; refused in a deployment, where
            the server chooses the seed); ``auto``: ``os`` in a deployment, ``seeded`` in
            simulation (the summary says so).
        sampler: How the counts are drawn. ``chacha``: an exact Binomial sampler (bit-by-bit
            comparisons of uniforms with p, counted by popcounts) reading a ChaCha20
            keystream under a 256-bit key (from the operating system, or derived from the
            seed when ``randomness`` is seeded); ``torch``: ``torch.binomial``
            with a Mersenne Twister generator seeded with 64 bits, the sampler of runs made
            before 2026-11-25 (kept to repeat them draw for draw; refused in a deployment).
            ``chacha`` is exact by construction (integer comparisons only); ``torch.binomial``
            approximates the Binomial law in floating point. ``chacha``'s time grows with b
            (about b / 32 + 5 keystream words per count): about twice as fast as ``torch`` at
            b = 64, slower from about b = 256 (2.7 times at b = 1024, 7 at b = 4096: torch's
            rejection sampler costs the same for any b; docs/benchmarks.md).
        max_epsilon: A budget at ``delta`` for each epsilon a run reports (PBM's ``epsilon`` of
            the features against the server, the gradient noise's ``label_epsilon``): a run
            whose planned epochs would spend more is refused before it starts; a resumed or
            extended run that has spent more already, or whose next epoch would, is refused
            before any file changes; one that reaches it stops there (exit status 3); 0 = no
            budget.
        gradient_noise: Clipping and Gaussian noise of the gradients the label holder sends.
    """

    mechanism: Annotated[str, Registered(MECHANISMS.names)] = NO_MECHANISM
    trials: Annotated[int, Range(ge=1, le=4096)] = 16
    beta: Annotated[float, Range(gt=0, le=0.25)] = 0.05
    clip: Annotated[float, Range(gt=0)] = 1.0
    secure_aggregation: Literal["auto", "on", "off"] = "auto"
    delta: Annotated[float, Range(gt=0, lt=1)] = 1e-5
    eval_fraction_bits: Annotated[int, Range(ge=8, le=32)] = 16
    randomness: Literal["auto", "seeded", "os"] = "auto"
    sampler: Literal["chacha", "torch"] = "chacha"
    max_epsilon: Annotated[float, Range(ge=0, note="0 = no budget")] = 0.0
    gradient_noise: GradientNoiseConfig = field(default_factory=GradientNoiseConfig)


@dataclass(frozen=True)
class RatioScheduleConfig(Section):
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

    kind: Annotated[str, Registered(ratio_kinds)] = "constant"
    value: Ratio = 0.0
    steps: Annotated[
        tuple[tuple[float, ...], ...], Satisfies(pairs, "must be [round, ratio] pairs")
    ] = ()
    start_round: Annotated[int, Range(ge=0)] = 0
    end_round: Annotated[int, Range(ge=0)] = 0
    start_value: Ratio = 0.0
    end_value: Ratio = 0.0
    values: Annotated[tuple[float, ...], Each(Range(ge=0, lt=1))] = ()

    def spec(self) -> dict[str, object]:
        """The schedule as ``vfl.schedules.ratio_schedule`` takes it: its kind's keys only."""
        spec: dict[str, object] = {"kind": self.kind}
        for key in SCHEDULES[self.kind].ratio_keys:
            value = getattr(self, key)
            if key == "steps":
                value = [[int(r), float(v)] for r, v in value]
            spec[key] = list(value) if isinstance(value, tuple) else value
        return spec

    @property
    def is_zero(self) -> bool:
        """Whether the ratio is 0 in every round."""
        return ratio_schedule(self.spec()).peak() == 0


@dataclass(frozen=True)
class PartyLightweightConfig(Section):
    """One party's own schedules (heterogeneous devices), replacing the shared ones.

    Attributes:
        party: The party id, 1..M.
        alpha: Its pruning ratio schedule.
        beta: Its upload sparsification schedule.
    """

    party: Annotated[int, Range(ge=1)] = 0
    alpha: RatioScheduleConfig = field(default_factory=RatioScheduleConfig)
    beta: RatioScheduleConfig = field(default_factory=RatioScheduleConfig)


@dataclass(frozen=True)
class LightweightConfig(Section):
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
