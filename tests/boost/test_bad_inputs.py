"""Bad inputs to SecureBoost: each gives one clear error naming the value and what is valid."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from tests.boost.helpers import TEST_KEY_BITS, short_keys, vertical_table
from vfl.boost import BoostParams, train_secureboost
from vfl.boost.active import ActiveBooster
from vfl.boost.link import local_link
from vfl.boost.messages import (
    Ciphertexts,
    EncryptedGradients,
    HistogramReply,
    NodeHistogram,
    PaillierKey,
    Reply,
    Request,
)
from vfl.boost.paillier import KeyPair, encrypt_all
from vfl.boost.passive import PassiveBooster
from vfl.errors import ConfigError, ProtocolError, WireError


def fit(passive_type: type[PassiveBooster], passives: tuple[int, ...] = (2, 3)) -> ActiveBooster:
    labels, blocks = vertical_table(60, (1, 1, 1), seed=11)
    params = BoostParams(num_trees=1, max_depth=2, max_bin=4)
    keys = short_keys()
    holders = {
        p: passive_type(p, blocks[p], max_bin=params.max_bin, insecure_test_key=True)
        for p in passives
    }
    active = ActiveBooster(1, labels, blocks[1], params, keys, workers=1)
    link = local_link(holders)
    active.connect(link, [2, 3])
    active.fit(link)
    return active


class GarblingPassive(PassiveBooster):
    """Sends valid ciphertexts of this run's key, but of random numbers (corrupt histograms)."""

    def handle(self, request: Request) -> Reply:
        reply = super().handle(request)
        if isinstance(reply, HistogramReply) and self._key is not None:
            key = self._key
            garbled = tuple(
                NodeHistogram(
                    h.node,
                    Ciphertexts(
                        h.values.width,
                        key.encode(
                            encrypt_all(
                                key.n, [secrets.randbits(400) for _ in range(h.values.count)]
                            )
                        ),
                    ),
                )
                for h in reply.histograms
            )
            reply = HistogramReply(reply.tree, garbled)
        return reply


class FailingPassive(PassiveBooster):
    """A holder whose machine fails once training starts."""

    def handle(self, request: Request) -> Reply:
        if isinstance(request, EncryptedGradients) and self.party == 3:
            raise OSError("disk full")
        return super().handle(request)


def test_the_honest_holders_train() -> None:
    # Prepare / Execute: the negative control of the tests below
    active = fit(PassiveBooster)

    # Assert
    assert len(active.trees) == 1


def test_histograms_that_do_not_decrypt_to_sums_are_refused() -> None:
    with pytest.raises(
        ProtocolError,
        match=r"party 2's histogram of node 0 does not decrypt to valid sums .* under another"
        r" public key than this run's, or corrupted",
    ):
        fit(GarblingPassive)


def test_a_holder_that_fails_is_named() -> None:
    with pytest.raises(ProtocolError, match="party 3 failed: disk full"):
        fit(FailingPassive)


def test_a_missing_holder_is_named() -> None:
    with pytest.raises(ProtocolError, match=r"no passive holder 3; this link reaches \[2\]"):
        fit(PassiveBooster, passives=(2,))


def test_gradients_of_another_key_size_are_refused() -> None:
    # Prepare: a holder that was announced this run's 512-bit key
    _, blocks = vertical_table(4, (1, 1), seed=0)
    holder = PassiveBooster(2, blocks[2], max_bin=4, insecure_test_key=True)
    holder.handle(PaillierKey(short_keys().public.to_bytes()))
    other = KeyPair.generate(1024, insecure_test_key=True).public
    values = Ciphertexts(other.ciphertext_size, other.encode([other.encrypt_zero()] * 4))

    # Execute / Assert
    with pytest.raises(
        WireError, match="the gradients are 256-byte ciphertexts; the announced 512-bit key's are"
    ):
        holder.handle(EncryptedGradients(0, 107, values))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"key_bits": 1024}, ConfigError, r"key_bits must lie in \[2048, 8192\], got 1024"),
        ({"key_bits": 1001, "insecure_test_key": True}, ConfigError, "multiple of 8"),
        ({"workers": 0, "insecure_test_key": True}, ConfigError, "workers must be an integer"),
        (
            {"active_party": 4, "insecure_test_key": True},
            ConfigError,
            r"given for parties \[1, 2, 3\]; expected one for each of \[1, 2, 3, 4\]",
        ),
    ],
)
def test_run_arguments_out_of_range_are_named(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    # Prepare
    labels, blocks = vertical_table(20, (1, 1, 1), seed=0)
    settings = {"key_bits": TEST_KEY_BITS, **kwargs}

    # Execute / Assert
    with pytest.raises(error, match=message):
        train_secureboost(labels, blocks, BoostParams(num_trees=1), **settings)  # type: ignore[arg-type]


def test_labels_for_another_number_of_rows_are_refused() -> None:
    labels, blocks = vertical_table(20, (1, 1, 1), seed=0)
    with pytest.raises(ProtocolError, match="19 feature rows for 20 labels"):
        ActiveBooster(1, labels, blocks[1][:19], BoostParams(), short_keys(), workers=1)
    assert np.isfinite(labels).all()
