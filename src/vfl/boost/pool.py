"""Encryption and decryption spread over processes: each is independent big-integer work.

A tree's encryption (one Paillier encryption per row) dominates the label holder's time, and
Python threads do not run gmpy2's arithmetic in parallel, so the work goes to worker processes
(started with ``spawn``: no inherited state, no fork of a process holding other threads). Only the
label holder runs one, on its own machine: its private primes go to its own children through a
local pipe, never to another holder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from multiprocessing import get_context
from types import TracebackType

from vfl.boost.paillier import KeyPair, decrypt_all, encrypt_all_private
from vfl.errors import ConfigError

MIN_PARALLEL_ITEMS = 64
"""Below this many operations a batch runs in the calling process (starting work costs more)."""


def available_cores() -> int:
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class CipherPool:
    """The label holder's encryption and decryption, over ``workers`` processes.

    ``workers=1`` runs everything in the calling process. The pool starts on first use and
    stops on ``close()`` (or at the end of a ``with`` block).
    """

    def __init__(self, keys: KeyPair, workers: int | None = None) -> None:
        count = available_cores() if workers is None else workers
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
        self.keys = keys
        self.workers = count
        self._executor: Executor | None = None

    def encrypt(self, plaintexts: Sequence[int]) -> list[int]:
        """``Enc(m mod n)`` of every plaintext, in order."""
        key = self.keys
        return self._run(encrypt_all_private, plaintexts, (key.public.n, key.p, key.q))

    def decrypt(self, ciphertexts: Sequence[int]) -> list[int]:
        """The plaintexts in ``[0, n)`` of every ciphertext, in order."""
        key = self.keys
        return self._run(decrypt_all, [int(c) for c in ciphertexts], (key.public.n, key.p, key.q))

    def _run(
        self,
        work: Callable[..., list[int]],
        items: Sequence[int],
        key: tuple[int, ...],
    ) -> list[int]:
        if self.workers == 1 or len(items) < MIN_PARALLEL_ITEMS:
            return work(*key, items)
        chunk = -(-len(items) // (4 * self.workers))
        parts = [items[start : start + chunk] for start in range(0, len(items), chunk)]
        futures = [self._pool().submit(work, *key, part) for part in parts]
        return [value for future in futures for value in future.result()]

    def _pool(self) -> Executor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.workers, mp_context=get_context("spawn"))
        return self._executor

    def close(self) -> None:
        """Stop the worker processes (a later call starts new ones)."""
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def __enter__(self) -> CipherPool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
