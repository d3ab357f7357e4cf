"""What the composition root gives a server-side loop: its codecs, privacy stage and steps."""

from __future__ import annotations

from dataclasses import dataclass, field

from vfl.compress.codec import MessageSeeds, TensorCodec
from vfl.models.optim import LearningRateSchedule
from vfl.privacy.events import PbmEvent
from vfl.privacy.gradient_noise import GradientNoise
from vfl.privacy.secure_sum import ServerSecureSum
from vfl.roles.local import LocalSteps


@dataclass(frozen=True)
class Codecs:
    """The codec of each compressed tensor; ``None`` sends float32 tensors as they are.

    Attributes:
        embedding: Parties' embeddings to the server (C_1..C_M).
        gradient: Gradients from the server to the parties (labels private).
        server_model: The server model to the parties (C_0; labels shared).
    """

    embedding: TensorCodec | None = None
    gradient: TensorCodec | None = None
    server_model: TensorCodec | None = None


@dataclass(frozen=True)
class ServerPrivacy:
    """VFL-PBM at the server: the secure-sum sessions, what one epoch releases, the delta.

    Attributes:
        secure_sum: The mechanism and the secure-aggregation sessions.
        event: One release of one sample's embedding (for the accountant).
        delta: The delta of the reported epsilon.
    """

    secure_sum: ServerSecureSum
    event: PbmEvent
    delta: float


@dataclass(frozen=True)
class LoopOptions:
    """Server-side protocol options.

    Attributes:
        steps: Q and the proximal weight for the server's own steps.
        codecs: The codec of each compressed tensor.
        seeds: Per-message seeds shared with the parties.
        learning_rate: Per-round learning rate, or ``None`` to keep the optimizer's.
        privacy: The private-aggregation stage (VFL-PBM), or ``None``.
        compress_evaluation: Evaluation embeddings arrive through the embedding codec.
        active_party: The party whose block includes the head (FedBCD's party K, in the server's
            process), or 0.
        gradient_noise: Clips and noises every gradient row sent to a party, or ``None``.
        delta: The delta of the gradient noise's reported epsilon.
        pipeline: Inside an epoch, a round's gradients travel with the next round's batch
            (``GradEmbedRequest``: one message to each party and one reply per round instead of
            two of each); the parties compute exactly what they would otherwise.
    """

    steps: LocalSteps = field(default_factory=LocalSteps)
    codecs: Codecs = field(default_factory=Codecs)
    seeds: MessageSeeds = field(default_factory=lambda: MessageSeeds(0))
    learning_rate: LearningRateSchedule | None = None
    privacy: ServerPrivacy | None = None
    compress_evaluation: bool = False
    active_party: int = 0
    gradient_noise: GradientNoise | None = None
    delta: float = 1e-5
    pipeline: bool = False
