"""Exact Binomial(b, p) draws from a ChaCha20 keystream: the PBM's default count sampler.

A Bernoulli(p) trial succeeds when a uniform number ``U`` in ``[0, 1)`` is below ``p``. Reading
``U``'s bits from a random stream, most significant first, and comparing them with the bits of
``p`` decides the trial at the first bit where they differ, which is exact: for every float64
``p`` in ``[2^-11, 1)`` the product ``T = p 2^64`` is an integer, so 64 bits of ``U`` settle
every trial but those whose 64 bits equal ``T``, and those fail (``U >= T 2^-64 = p``). A
coordinate's undecided trials are alike, so the sampler tracks only their number: at each level
it reads one fresh bit per undecided trial and counts the set ones (a popcount of whole 64-bit
words), which decides how many trials succeed, fail or stay
(``vfl.privacy.binomial_kernels`` defines the order in which words are read). Integer
operations only, no floating-point rejection steps; about ``b / 32 + 5`` words of keystream
per count (7.3 at b = 64, 39 at b = 1024).

The stream is ChaCha20 (``cryptography``, OpenSSL) under a 256-bit key, with the number of the
draw as its nonce, so every draw reads a fresh stream: in a deployment the key comes from the
operating system; in simulation it is derived from the seed (reproducible, and not private).

Example:
    >>> import numpy as np
    >>> sampler = ChaChaBinomial.from_seed(0)
    >>> counts = sampler.binomial(64, np.full(4, 0.5))
    >>> counts.dtype, counts.shape, bool(((counts >= 0) & (counts <= 64)).all()), sampler.draws
    (dtype('int64'), (4,), True, 1)
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import torch
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from vfl.errors import ConfigError
from vfl.privacy import binomial_kernels
from vfl.privacy.binomial_kernels import Ints as Units
from vfl.privacy.binomial_kernels import Words

KEY_BYTES = 32
"""ChaCha20's key: 256 bits."""

FIRST_WORDS_PER_COORDINATE = 8
"""Stream words fetched per coordinate before the first level, plus ``ceil((b - 64) / 28)`` for
``b > 64``. A coordinate uses one word per level while at most 64 trials are undecided (about
7.3 levels from 64 trials) and ``ceil(N / 64)`` at a level with ``N``: about ``b / 32 + 5`` in
all. A draw that needs more fetches them as it goes, which does not change what it reads."""

_SEED_LABEL = b"vfl/pbm-counts/v1"
_NONCE = struct.Struct("<IQI")  # block counter 0 || u64 draw number || u32 zero
_LAST_LEVEL = 63
_SCALE = 2.0**64
_FULL = np.uint64(0xFFFFFFFFFFFFFFFF)
_KEPT_BUFFER_BYTES = 1 << 22  # the largest first keystream of a draw, kept between draws


class CountSampler(Protocol):
    """Draws the PBM's counts and keeps the state that lets a resumed run draw the same ones."""

    def binomial(self, trials: int, prob: npt.NDArray[np.float64]) -> Units:
        """One Binomial(``trials``, ``p``) count per entry of ``prob``, int64, same shape."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything the next draws depend on."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state_dict``'s state."""
        ...


@dataclass
class ChaChaBinomial:
    """Exact Binomial draws from ChaCha20 keystreams (see the module docstring).

    Attributes:
        key: The 256-bit ChaCha20 key.
        draws: How many draws were made (the next draw's nonce).
        secret: The key came from the operating system: it is never written to a checkpoint,
            and a restored sampler takes a fresh one (so a restart, at whatever round the
            server restores, never replays keystream on other inputs).
        compiled: Run the numba loop (``vfl[fast]``) or the numpy reference; both read the
            same words and give the same counts. ``None``: the loop where numba is usable.
    """

    key: bytes = field(repr=False)
    draws: int = 0
    secret: bool = False
    compiled: bool | None = None
    _zeros: bytes = field(default=b"", repr=False, compare=False)
    _buffer: bytearray = field(default_factory=bytearray, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.key) != KEY_BYTES:
            raise ConfigError(f"a ChaCha20 key has {KEY_BYTES} bytes, got {len(self.key)}")

    @classmethod
    def from_seed(cls, seed: int) -> ChaChaBinomial:
        """A reproducible sampler whose key is SHA-256 of a label and ``seed`` (not private)."""
        digest = hashlib.sha256(_SEED_LABEL + seed.to_bytes(16, "little", signed=True)).digest()
        return cls(digest)

    @classmethod
    def from_os(cls) -> ChaChaBinomial:
        """A sampler keyed by 256 bits from the operating system (what a deployment uses)."""
        return cls(os.urandom(KEY_BYTES), secret=True)

    def binomial(self, trials: int, prob: npt.NDArray[np.float64]) -> Units:
        """One exact Binomial(``trials``, ``p``) count per entry of ``prob``, int64, same shape.

        Raises:
            ConfigError: if ``trials`` is not an integer >= 1, or a probability is not a float64
                in ``[2^-11, 1)`` (where ``p 2^64`` is an integer, so the comparison is exact).
        """
        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
            raise ConfigError(f"trials must be an integer >= 1, got {trials!r}")
        thresholds = _thresholds(prob)
        undecided = np.full(len(thresholds), trials, dtype=np.int64)
        successes = np.zeros(len(thresholds), dtype=np.int64)
        stream = Cipher(
            algorithms.ChaCha20(self.key, _NONCE.pack(0, self.draws, 0)), mode=None
        ).encryptor()
        self.draws += 1

        def refill(words: Words, used: int, active: Units) -> Words:
            """The unread words, then at least two levels' worth more of the same stream."""
            more = max(2 * binomial_kernels.words_needed(undecided[active]), 256)
            return np.concatenate(
                [words[used:], np.frombuffer(stream.update(bytes(8 * more)), dtype="<u8")]
            )

        first = len(thresholds) * (FIRST_WORDS_PER_COORDINATE + math.ceil(max(trials - 64, 0) / 28))
        # At most the kept buffer: a larger first fetch would pay for fresh memory every draw.
        words = self._first_words(stream, min(first, _KEPT_BUFFER_BYTES // 8))
        active = np.arange(len(thresholds), dtype=np.int64)
        level = _LAST_LEVEL
        if binomial_kernels.available() if self.compiled is None else self.compiled:
            run = binomial_kernels.compiled()
            remaining = len(active)
            while True:
                remaining, used, level = run(
                    thresholds, active, remaining, undecided, successes, words, level
                )
                if level < 0 or remaining == 0:
                    break
                words = refill(words, used, active[:remaining])
        else:
            while True:
                active, used, level = binomial_kernels.reference_levels(
                    thresholds, active, undecided, successes, words, level
                )
                if level < 0 or not len(active):
                    break
                words = refill(words, used, active)
        counts: Units = successes.reshape(prob.shape)
        return counts

    def _first_words(self, stream: Any, count: int) -> Words:
        """``count`` words of ``stream``, written into a buffer the sampler keeps.

        A fresh quarter-megabyte per draw would cost a page fault per 4 KiB.
        """
        size = 8 * count
        if len(self._zeros) < size:
            self._zeros = bytes(size)
            # update_into wants room for one cipher block beyond the data.
            self._buffer = bytearray(size + 63)
        stream.update_into(memoryview(self._zeros)[:size], self._buffer)
        return np.frombuffer(self._buffer, dtype="<u8", count=count)

    def state_dict(self) -> dict[str, Any]:
        """The number of draws made and, for a seeded key only, the key (a uint8 tensor)."""
        state: dict[str, Any] = {"sampler": "chacha", "draws": self.draws}
        if not self.secret:
            state["key"] = torch.frombuffer(bytearray(self.key), dtype=torch.uint8)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue a seeded stream from ``state_dict``; a secret sampler takes a fresh OS key.

        Raises:
            ConfigError: if ``state`` was written by another sampler (a run resumed with a
                different ``privacy.sampler`` than it started with), or a seeded sampler is
                given the state of a secret one (whose key was never saved).
        """
        if state.get("sampler") != "chacha":
            raise ConfigError(
                "this checkpoint's PBM counts were drawn by the 'torch' sampler; resume it with"
                " privacy.sampler = 'torch'"
            )
        if self.secret:
            self.key, self.draws = os.urandom(KEY_BYTES), 0
            return
        if "key" not in state:
            raise ConfigError(
                "this checkpoint's PBM noise came from an operating-system key, which is never"
                " saved; resume it with privacy.randomness = 'os'"
            )
        key = bytes(state["key"].to(torch.uint8).tolist())
        if len(key) != KEY_BYTES:
            raise ConfigError(f"a ChaCha20 key has {KEY_BYTES} bytes, got {len(key)}")
        self.key, self.draws = key, int(state["draws"])


@dataclass
class TorchBinomial:
    """``torch.binomial`` with a torch generator: the sampler of runs before the ChaCha20 one.

    Kept so that those runs can be repeated draw for draw (``privacy.sampler = 'torch'``).
    """

    generator: torch.Generator

    def binomial(self, trials: int, prob: npt.NDArray[np.float64]) -> Units:
        """One Binomial(``trials``, ``p``) count per entry of ``prob``, int64, same shape."""
        probabilities = torch.from_numpy(np.asarray(prob, dtype=np.float64))
        count = torch.full_like(probabilities, float(trials))
        drawn: Units = torch.binomial(count, probabilities, generator=self.generator).numpy()
        return drawn.astype(np.int64)

    def state_dict(self) -> dict[str, Any]:
        """The generator's state."""
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue the generator from ``state_dict``.

        Raises:
            ConfigError: if ``state`` was written by the ChaCha20 sampler.
        """
        if "generator" not in state:
            raise ConfigError(
                "this checkpoint's PBM counts were drawn by the 'chacha' sampler; resume it with"
                " privacy.sampler = 'chacha'"
            )
        self.generator.set_state(state["generator"])


def _thresholds(prob: npt.NDArray[np.float64]) -> Words:
    """``p 2^64`` as uint64 for each probability, flat.

    Raises:
        ConfigError: as in ``ChaChaBinomial.binomial``.
    """
    if prob.dtype != np.float64:
        raise ConfigError(f"probabilities must be float64, got {prob.dtype}")
    flat = prob.reshape(-1)
    scaled = flat * _SCALE  # exact: a power-of-two scaling
    outside = ~((flat >= 2.0**-11) & (flat < 1.0))
    if outside.any():
        bad = float(flat[np.argmax(outside)])
        raise ConfigError(
            f"probability {bad} is outside [2^-11, 1), where this sampler is exact (PBM's p lies"
            " in [1/4, 3/4])"
        )
    thresholds: Words = scaled.astype(np.uint64)
    return thresholds
