"""Spreading PSI's per-element work over the cores.

libsodium's calls release Python's global interpreter lock (PyNaCl is built with cffi), so
threads that each take a contiguous chunk of a list run their scalar multiplications in
parallel; the chunks' results are joined in order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

MIN_CHUNK = 1024
"""Below this many elements per thread, one thread does the work (threads cost more)."""


def workers() -> int:
    """Threads for PSI work: the cores this process may use (``VFL_PSI_THREADS`` overrides)."""
    configured = os.environ.get("VFL_PSI_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere every core
    return max(1, len(affinity(0)) if affinity is not None else os.cpu_count() or 1)


def parallel_chunks(work: Callable[[Sequence[T]], list[R]], items: Sequence[T]) -> list[R]:
    """``work`` over contiguous chunks of ``items``, in threads; the results in item order."""
    threads = min(workers(), len(items) // MIN_CHUNK)
    if threads <= 1:
        return work(items)
    size = -(-len(items) // threads)
    chunks = [items[start : start + size] for start in range(0, len(items), size)]
    with ThreadPoolExecutor(threads, thread_name_prefix="vfl-psi") as pool:
        return [result for part in pool.map(work, chunks) for result in part]


def joined(work: Callable[[Sequence[T]], list[bytes]], items: Sequence[T]) -> bytes:
    """``parallel_chunks(work, items)``, concatenated."""
    results: list[bytes] = parallel_chunks(work, items)
    return b"".join(results)
