"""How a party takes part in a protocol: the stages and state the composition root gives it."""

from __future__ import annotations

from dataclasses import dataclass, field

from vfl.compress.codec import MessageSeeds, TensorCodec
from vfl.models.optim import LearningRateSchedule
from vfl.privacy.secure_sum import PartySecureSum
from vfl.prune.lightweight import Lightweighting
from vfl.roles.local import LocalSteps
from vfl.roles.shared import ActiveBlock, SharedLabels


@dataclass
class PartyOptions:
    """How a party takes part in a protocol (the defaults are plain split learning).

    Attributes:
        steps: Local steps per round and the proximal weight.
        uplink: Compresses this party's embedding (``None``: float32 ``EmbedReply``).
        gradient: Decodes compressed gradients (``None``: float32 ``GradRequest``).
        shared: Shared-labels state, or ``None`` when labels are private to the server.
        seeds: Per-message seeds shared with the server.
        learning_rate: Per-round learning rate, or ``None`` to keep the optimizer's.
        privacy: VFL-PBM: the mechanism and the secure-sum sessions, or ``None``.
        lightweight: LVFL: pruning schedule and per-round compute records, or ``None``.
        compress_evaluation: Send evaluation embeddings through ``uplink`` too.
        active: For the active party (FedBCD's party K, in the label holder's process): the
            head, its optimizer and the labels its exact local steps train with; ``None`` else.
    """

    steps: LocalSteps = field(default_factory=LocalSteps)
    uplink: TensorCodec | None = None
    gradient: TensorCodec | None = None
    shared: SharedLabels | None = None
    seeds: MessageSeeds = field(default_factory=lambda: MessageSeeds(0))
    learning_rate: LearningRateSchedule | None = None
    privacy: PartySecureSum | None = None
    lightweight: Lightweighting | None = None
    compress_evaluation: bool = False
    active: ActiveBlock | None = None
