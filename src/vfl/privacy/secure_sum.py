"""VFL-PBM on the wire: each party's PBM counts, masked for secure aggregation, and their sum.

Tran et al.'s Algorithm 2 ("Privacy Tradeoffs in Vertical Federated Learning", Section 4): in
training every party privatizes its tanh-bounded embedding with the Poisson Binomial Mechanism,
masks the counts with pairwise masks mod 2^k (``vfl.secagg``), and the server learns only Q = sum of
the counts, from which it estimates the sum of the embeddings. Evaluation needs no noise (the
paper's authors evaluate with exact sums), but with secure aggregation on, the parties still hide
their individual evaluation embeddings: each sends its embedding in fixed point, masked in a second
key-agreement session, so the server learns only their sum.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from vfl.errors import ProtocolError, WireError
from vfl.privacy.binomial import CountSampler
from vfl.privacy.events import PbmEvent
from vfl.privacy.fixed_point import from_fixed_point_sum, to_fixed_point
from vfl.privacy.pbm import PoissonBinomialMechanism
from vfl.privacy.releases import ReleaseGuard
from vfl.secagg import (
    KeyPair,
    PartyState,
    SecAggParams,
    ServerState,
    decode_masked,
    encode_masked,
    make_params,
    mask,
    relay_public_keys,
    setup_party,
    share_keys,
    unmask,
)
from vfl.wire import (
    SPLIT_TRAIN,
    Ack,
    EmbedReply,
    MaskedCounts,
    Message,
    PackedCounts,
    PublicKeyAnnounce,
    PublicKeyDirectory,
    SecAggSetup,
)
from vfl.wire.bitpack import pack_bits, unpack_bits

TRAIN_CHANNEL = 0
EVAL_RUN_SUFFIX = b"/eval"


def session_params(setup: SecAggSetup, *, evaluation: bool) -> SecAggParams:
    """The training or evaluation session a ``SecAggSetup`` describes."""
    ids = [int(p) for p in setup.party_ids.tolist()]
    if not evaluation:
        return make_params(
            run_id=setup.run_id, party_ids=ids, max_count=setup.max_count, bits=setup.bits
        )
    return make_params(
        run_id=setup.run_id + EVAL_RUN_SUFFIX, party_ids=ids, max_count=2**setup.eval_fraction_bits
    )


@dataclass
class PartySecureSum:
    """A party's side of VFL-PBM: the mechanism, its randomness, and its secure-sum sessions.

    Attributes:
        party_id: This party.
        mechanism: The PBM parameters (clip, trials, beta).
        sampler: Draws the mechanism's counts (its randomness).
        secure: Whether counts are masked (secure aggregation) or sent in the clear.
        guard: Counts this party's releases of each training row and enforces its own budget
            (a deployed party's); ``None`` counts nothing.
    """

    party_id: int
    mechanism: PoissonBinomialMechanism
    sampler: CountSampler
    secure: bool = True
    guard: ReleaseGuard | None = None
    _train: PartyState | None = field(default=None, repr=False)
    _eval: PartyState | None = field(default=None, repr=False)
    _fraction_bits: int = 0
    _eval_nonce: tuple[int, int] = (-1, -1)

    def handle_setup(self, setup: SecAggSetup) -> PublicKeyAnnounce:
        """Stage 1: fresh keys for both sessions; announce the (shared) public key."""
        keys = KeyPair.generate()
        self._train = setup_party(
            session_params(setup, evaluation=False), party_id=self.party_id, key_pair=keys
        )
        self._eval = setup_party(
            session_params(setup, evaluation=True), party_id=self.party_id, key_pair=keys
        )
        self._fraction_bits = setup.eval_fraction_bits
        return PublicKeyAnnounce(round=setup.round, public_key=keys.public_bytes)

    def handle_directory(self, directory: PublicKeyDirectory) -> Ack:
        """Stage 2: derive every pair seed from the relayed public keys."""
        if self._train is None or self._eval is None:
            raise ProtocolError(f"party {self.party_id}: key directory before setup")
        keys = dict(
            zip((int(p) for p in directory.party_ids.tolist()), directory.public_keys, strict=True)
        )
        self._train = share_keys(self._train, keys)
        self._eval = share_keys(self._eval, keys)
        return Ack(round=directory.round)

    def train_reply(
        self, embedding: torch.Tensor, round_: int, *, rows: torch.Tensor | None = None
    ) -> Message:
        """PBM counts of the round's embedding (of training ``rows``), masked or packed.

        Raises:
            PrivacyBudgetExhausted: if the guard refuses the release.
            ProtocolError: if the party has a guard and ``rows`` is not given.
        """
        if self.guard is not None and rows is None:
            raise ProtocolError(f"party {self.party_id}: a counted release needs its rows")
        counts = self.mechanism.privatize(embedding, sampler=self.sampler).numpy()
        reply: Message
        if not self.secure:
            packed = pack_bits(counts, bits=self.mechanism.count_bits)
            reply = PackedCounts(round=round_, payload=packed)
        else:
            state = self._require(self._train)
            self._train, masked = mask(state, counts, round=round_, channel=TRAIN_CHANNEL)
            payload = encode_masked(masked, bits=state.params.bits)
            reply = MaskedCounts(round=round_, payload=payload)
        if self.guard is not None and rows is not None:  # counted (and written) as it leaves
            self.guard.admit(rows.numpy(), self.release_event(width=embedding.shape[1]))
        return reply

    def release_event(self, *, width: int) -> PbmEvent:
        """One release of one row's ``width``-wide embedding, as the guard accounts for it.

        Every party of the secure sum adds noise to it; counts in the clear only this party's.

        Raises:
            ProtocolError: if the party has no guard.
        """
        if self.guard is None:
            raise ProtocolError(f"party {self.party_id} counts no releases (it has no guard)")
        contributors = len(self._require(self._train).params.party_ids) if self.secure else 1
        mechanism = self.mechanism
        return self.guard.event(
            trials=mechanism.trials, beta=mechanism.beta, parties=contributors, dimension=width
        )

    def eval_reply(self, embedding: torch.Tensor, round_: int, *, split: int) -> Message:
        """An evaluation embedding: in fixed point and masked, or plain without secure sums.

        Raises:
            ProtocolError: for training rows at a party with a guard: their exact embeddings
                would release them without noise (epsilon infinite).
        """
        if self.guard is not None and split == SPLIT_TRAIN:
            raise ProtocolError(
                f"party {self.party_id} refuses to evaluate training rows: their exact"
                " embeddings would release them without PBM noise"
            )
        if not self.secure:
            return EmbedReply(round=round_, embedding=embedding)
        state = self._require(self._eval)
        round_index, channel = self._eval_nonce
        self._eval_nonce = (round_, channel + 1 if round_ == round_index else 0)
        fixed = to_fixed_point(
            embedding, clip=self.mechanism.clip, fraction_bits=self._fraction_bits
        )
        self._eval, masked = mask(state, fixed, round=round_, channel=self._eval_nonce[1])
        return MaskedCounts(round=round_, payload=encode_masked(masked, bits=state.params.bits))

    def _require(self, state: PartyState | None) -> PartyState:
        if state is None or not state.pair_seeds:
            raise ProtocolError(f"party {self.party_id}: secure aggregation is not set up")
        return state

    def reset(self) -> None:
        """Forget the sessions (after a restart, keys are agreed afresh)."""
        self._train = self._eval = None
        self._eval_nonce = (-1, -1)

    def state_dict(self) -> dict[str, Any]:
        """The sampler's state: a resumed seeded run draws what an uninterrupted one would.

        Neither secure-aggregation keys nor an operating-system sampler key are kept: after a
        restart the sessions are agreed afresh and the noise is drawn under a fresh key.
        """
        return self.sampler.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue the sampler's stream from ``state_dict``; forget the sessions.

        Raises:
            ConfigError: if the state was written by the other sampler.
        """
        self.sampler.load_state_dict(state)
        self.reset()


@dataclass
class ServerSecureSum:
    """The server's side of VFL-PBM: it relays public keys and sees only sums.

    Attributes:
        mechanism: The PBM parameters (to decode sums of counts).
        party_ids: All parties, ascending.
        secure: Whether counts arrive masked.
        fraction_bits: Fixed-point precision of evaluation sums.
    """

    mechanism: PoissonBinomialMechanism
    party_ids: tuple[int, ...]
    secure: bool = True
    fraction_bits: int = 16
    _train: ServerState | None = field(default=None, repr=False)
    _eval: ServerState | None = field(default=None, repr=False)

    def setup_message(self, round_: int) -> SecAggSetup:
        """Stage 1: fresh session parameters for every party (a new random run id)."""
        train = make_params(
            run_id=os.urandom(16), party_ids=self.party_ids, max_count=self.mechanism.trials
        )
        setup = SecAggSetup(
            round=round_,
            run_id=train.run_id,
            party_ids=torch.tensor(self.party_ids, dtype=torch.int64),
            max_count=train.max_count,
            bits=train.bits,
            eval_fraction_bits=self.fraction_bits,
        )
        self._train = ServerState(train)
        self._eval = ServerState(session_params(setup, evaluation=True))
        return setup

    def directory(self, round_: int, announced: dict[int, bytes]) -> PublicKeyDirectory:
        """Stage 2: check and relay the public keys (public data only)."""
        if self._train is None or self._eval is None:
            raise ProtocolError("public keys before the secure-aggregation setup")
        self._train = relay_public_keys(self._train, announced)
        self._eval = relay_public_keys(self._eval, announced)
        keys = tuple(self._train.directory[p] for p in self.party_ids)
        return PublicKeyDirectory(
            round=round_, party_ids=torch.tensor(self.party_ids), public_keys=keys
        )

    def estimate_sum(self, replies: dict[int, Message], shape: tuple[int, int]) -> torch.Tensor:
        """The unbiased estimate of the embeddings' sum from the parties' count messages."""
        total = self._sum_counts(replies, shape)
        return self.mechanism.estimate(
            torch.from_numpy(total.astype(np.int64)), contributors=len(self.party_ids)
        )

    def _sum_counts(self, replies: dict[int, Message], shape: tuple[int, int]) -> np.ndarray:
        if self.secure:
            state = self._ready(self._train)
            masked = {
                p: decode_masked(_payload(m, MaskedCounts, p), shape=shape, bits=state.params.bits)
                for p, m in replies.items()
            }
            return unmask(state, masked)
        bits, count = self.mechanism.count_bits, shape[0] * shape[1]
        blocks = [
            unpack_bits(_payload(m, PackedCounts, p), bits=bits, count=count)
            for p, m in replies.items()
        ]
        total: np.ndarray = np.sum(blocks, axis=0).reshape(shape)
        return total

    def eval_sum(self, replies: dict[int, Message], shape: tuple[int, int]) -> torch.Tensor:
        """The exact (fixed-point) sum of the parties' evaluation embeddings."""
        state = self._ready(self._eval)
        masked = {
            p: decode_masked(_payload(m, MaskedCounts, p), shape=shape, bits=state.params.bits)
            for p, m in replies.items()
        }
        return from_fixed_point_sum(
            unmask(state, masked),
            parties=len(self.party_ids),
            clip=self.mechanism.clip,
            fraction_bits=self.fraction_bits,
        )

    @staticmethod
    def _ready(state: ServerState | None) -> ServerState:
        if state is None or not state.directory:
            raise ProtocolError("secure aggregation is not set up")
        return state


def _payload(
    message: Message, expected: type[MaskedCounts] | type[PackedCounts], party: int
) -> bytes:
    if not isinstance(message, expected):
        raise WireError(
            f"party {party} answered {type(message).__name__}, expected {expected.__name__}"
        )
    return message.payload
