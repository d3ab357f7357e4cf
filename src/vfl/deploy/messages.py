"""Messages of a deployment: control (kinds 60-78) and the scoring lookup (kinds 30-31).

Control messages (alignment by PSI, setup, checkpoints, bundle export, prediction setup) are
never recorded in the communication ledger (see ``vfl.transport.link``); the gRPC transport
counts their bytes on the wire under ``control``. All go from the server to a party, which
answers with ``PsiPointsReply``, ``SetupReply`` or ``ControlAck``. In training and batch
prediction a party never receives an identifier in the clear: only blinded group elements (32
bytes each) and positions in the list it sent itself. Online scoring is the exception: its
``LookupRequest`` names the IDs to score (``docs/predict.md`` says what a party learns). Each
request declares the reply it accepts (``REPLIES``) and each reply checks its sizes against the
request (``check_answer``), as the training messages do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from vfl.deploy.psi_group import POINT_BYTES
from vfl.errors import WireError
from vfl.wire.schema import Message, register

# Replies (party to server).


@register(kind=62)
@dataclass(frozen=True)
class PsiPointsReply(Message):
    """A list of blinded elements (concatenated 32-byte encodings), in the order received."""

    points: bytes

    def check_answer(self, request: Message) -> None:
        """Whole elements; a blinded list keeps the length it was sent with."""
        if len(self.points) % POINT_BYTES:
            raise WireError(
                f"a PSI list of {len(self.points)} bytes is not a whole number of"
                f" {POINT_BYTES}-byte elements"
            )
        if isinstance(request, PsiBlindRequest) and len(self.points) != len(request.points):
            raise WireError(
                f"a blinded PSI list has {len(self.points) // POINT_BYTES} elements; it was sent"
                f" {len(request.points) // POINT_BYTES}"
            )


@register(kind=65)
@dataclass(frozen=True)
class SetupReply(Message):
    """The role is ready: its embedding width and the aligned row counts."""

    width: int
    num_train: int
    num_test: int

    def check_answer(self, request: Message) -> None:
        """A width of at least 1 and non-negative row counts."""
        if self.width < 1 or self.num_train < 0 or self.num_test < 0:
            raise WireError(
                f"a setup reply needs width >= 1 and row counts >= 0, got width {self.width},"
                f" {self.num_train} train and {self.num_test} test rows"
            )


@register(kind=67)
@dataclass(frozen=True)
class ControlAck(Message):
    """The control request of this round was carried out."""


# Requests (server to party).


@register(kind=60)
@dataclass(frozen=True)
class PsiStartRequest(Message):
    """Blind your own IDs of ``split`` with your secret key, in a secret random order."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (PsiPointsReply,)
    split: int


@register(kind=61)
@dataclass(frozen=True)
class PsiBlindRequest(Message):
    """Multiply every element of another holder's list by your key, keeping the order.

    Attributes:
        split: The split whose key to use.
        points: Concatenated 32-byte encodings of group elements.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (PsiPointsReply,)
    split: int
    points: bytes


@register(kind=63)
@dataclass(frozen=True)
class PsiResultRequest(Message):
    """The intersection: which positions of the list you sent are held by every holder.

    Attributes:
        split: The split the result is for.
        order: ``int64`` positions in your blinded list, ascending, shape ``(N_common,)``.
            Every holder orders the rows they name by ``vfl.deploy.psi_group.order_key``.
        alignment: The id under which to save the alignment (the same at every holder).
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (ControlAck,)
    split: int
    order: torch.Tensor
    alignment: str


@register(kind=64)
@dataclass(frozen=True)
class SetupRequest(Message):
    """Build your role for the run.

    Attributes:
        config: The run config as TOML text (the server's ``[data]`` and ``[output]`` left out).
        alignment: The id of the saved alignment to order rows by.
        restore_round: ``-1`` for fresh weights, else restore the checkpoint taken at this
            round (the server's last completed epoch).
        num_parties: M, the number of parties.
        num_classes: The task's number of classes.
        labels: With ``protocol.labels = "shared"`` only: the ``int64`` training labels in
            aligned order, ``(N,)``; otherwise empty (labels stay with the server).
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (SetupReply,)
    config: str
    alignment: str
    restore_round: int
    num_parties: int
    num_classes: int
    labels: torch.Tensor


@register(kind=66)
@dataclass(frozen=True)
class CheckpointRequest(Message):
    """Save your role's state as of ``round`` (an epoch just completed at the server)."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (ControlAck,)


@register(kind=68)
@dataclass(frozen=True)
class ExportRequest(Message):
    """Training is over: export your role's model bundle under the run's ``fingerprint``."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (ControlAck,)
    fingerprint: str


@register(kind=70)
@dataclass(frozen=True)
class BoostSetupRequest(Message):
    """SecureBoost: take your aligned rows as a passive holder, binned in ``max_bin`` bins.

    Attributes:
        alignment: The id of the saved alignment to order rows by.
        max_bin: Most bins per column (the run's ``boost.max_bin``).
        config: The run config as a party sees it (TOML), kept in the party's bundle.
        restore_trees: A resumed run's complete trees: take your split rules from your
            checkpoint after that many trees (0: a new run).
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (SetupReply,)
    alignment: str
    max_bin: int
    config: str
    restore_trees: int


@register(kind=69)
@dataclass(frozen=True)
class ModelSetupRequest(Message):
    """Build your role from your model bundle, to predict (no training).

    Attributes:
        fingerprint: The run of the server's model; the party's bundle must come from it.
        alignment: Batch prediction: the id of the alignment of the new rows (PSI); empty for
            online scoring, whose rows come with each ``LookupRequest``.
        num_classes: The task's number of classes.
        widths: ``int64`` embedding width of every party, ascending party id, ``(M,)``.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (SetupReply,)
    fingerprint: str
    alignment: str
    num_classes: int
    widths: torch.Tensor


@register(kind=31)
@dataclass(frozen=True)
class LookupReply(Message):
    """Which of the requested IDs the party cannot score, and notes on those it can.

    Attributes:
        failed: ``int64`` positions in the request's ID list that cannot be scored, ``(F,)``.
        reasons: Why, one UTF-8 sentence per failed position.
        noted: ``int64`` positions scored with a remark, ``(K,)``.
        notes: The remarks (an unseen category, encoded as all zeros), one per noted position.
    """

    failed: torch.Tensor
    reasons: tuple[bytes, ...]
    noted: torch.Tensor
    notes: tuple[bytes, ...]

    def check_answer(self, request: Message) -> None:
        """Positions are distinct, inside the request's list, and each has its sentence."""
        count = len(request.ids) if isinstance(request, LookupRequest) else 0
        for name, positions, texts in (
            ("failed", self.failed, self.reasons),
            ("noted", self.noted, self.notes),
        ):
            if positions.dtype != torch.int64 or positions.ndim != 1:
                raise WireError(f"lookup reply: {name} must be 1-D int64 positions")
            if len(positions) != len(texts):
                raise WireError(
                    f"lookup reply: {len(positions)} {name} positions but {len(texts)} sentences"
                )
            if len(positions) and not (0 <= int(positions.min()) <= int(positions.max()) < count):
                raise WireError(f"lookup reply: a {name} position lies outside the {count} IDs")
            if len(set(positions.tolist())) != len(positions):
                raise WireError(f"lookup reply: repeated {name} positions")


@register(kind=30)
@dataclass(frozen=True)
class LookupRequest(Message):
    """Online scoring: find these IDs in your current table and keep their rows for ``round``.

    The next ``EvalRequest`` of the same round names rows by their position in ``ids``.

    Attributes:
        ids: The IDs to score, as UTF-8 text, in request order.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (LookupReply,)
    ids: tuple[bytes, ...]
