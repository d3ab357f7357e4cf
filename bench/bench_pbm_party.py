"""One party's VFL-PBM pipeline, piece by piece, hot: what the 15 % goal leaves room for.

For one party of M = 4 and of M = 16 (a batch of 128 times a 32-wide tanh embedding, b = 64,
beta = 0.25, secure aggregation on), times each piece of ``PartySecureSum.train_reply`` called
back to back: the ChaCha20 keystream a draw reads first (4,096 counts x 8 words), the whole
exact draw, ``privatize`` (checks, p and the draw), masking with the M - 1 pair streams, and
packing. Each piece runs ``--calls`` times in a row (hot), the pieces taking turns block by
block; each figure is the median over ``--repeats`` blocks of the time per call, CPU time beside
it. One torch thread. Hot figures are a floor: in a training round each piece runs cold, up to
about twice as slow (``bench_cold_path.py``, ``bench_pbm.py``'s parts).

    .venv/bin/python bench/bench_pbm_party.py [--calls 100] [--repeats 7] [--json out]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from vfl.privacy.binomial import FIRST_WORDS_PER_COORDINATE, ChaChaBinomial
from vfl.privacy.pbm import PoissonBinomialMechanism
from vfl.secagg import KeyPair, encode_masked, make_params, mask, setup_party, share_keys

BATCH, WIDTH, TRIALS, BETA = 128, 32, 64, 0.25


def pieces(parties: int) -> dict[str, Callable[[], object]]:
    """The pipeline's pieces for party 1 of ``parties``, ready to call again and again."""
    mechanism = PoissonBinomialMechanism(clip=1.0, trials=TRIALS, beta=BETA)
    sampler = ChaChaBinomial.from_seed(0)
    embedding = torch.tanh(torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(0)))
    prob = (0.5 + BETA * embedding.double()).numpy()
    ids = list(range(1, parties + 1))
    params = make_params(run_id=bytes(16), party_ids=ids, max_count=TRIALS)
    keys = {p: KeyPair.generate() for p in ids}
    announced = {p: k.public_bytes for p, k in keys.items()}
    state = share_keys(setup_party(params, party_id=1, key_pair=keys[1]), announced)
    counts = mechanism.privatize(embedding, sampler=sampler).numpy()
    masked = mask(state, counts, round=0)[1]
    rounds = itertools.count(1)
    stream_bytes = bytes(8 * BATCH * WIDTH * FIRST_WORDS_PER_COORDINATE)
    into = bytearray(len(stream_bytes) + 63)
    key = bytes(32)

    def keystream() -> None:
        nonce = next(rounds).to_bytes(16, "little")
        Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor().update_into(
            stream_bytes, into
        )

    def masking() -> None:
        nonlocal state
        state = mask(state, counts, round=next(rounds))[0]

    return {
        "keystream": keystream,
        "draw": lambda: sampler.binomial(TRIALS, prob),
        "privatize": lambda: mechanism.privatize(embedding, sampler=sampler),
        "mask": masking,
        "pack": lambda: encode_masked(masked, bits=params.bits),
    }


def measure(parties: int, calls: int, repeats: int) -> dict[str, dict[str, float]]:
    """Median over ``repeats`` of µs per call (wall and CPU) of ``calls`` calls in a row.

    The pieces take turns block by block, so that the machine's drift hits all alike.
    """
    work = pieces(parties)
    for piece in work.values():  # warm-up: compilation, buffers
        piece()
    wall: dict[str, list[float]] = {name: [] for name in work}
    cpu: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(repeats):
        for name, piece in work.items():
            started, cpu_started = time.perf_counter(), time.thread_time()
            for _ in range(calls):
                piece()
            wall[name].append((time.perf_counter() - started) / calls)
            cpu[name].append((time.thread_time() - cpu_started) / calls)
    return {
        "us": {name: round(1e6 * statistics.median(t), 1) for name, t in wall.items()},
        "cpu_us": {name: round(1e6 * statistics.median(t), 1) for name, t in cpu.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, 1 torch thread, torch {torch.__version__}",
        "settings": f"batch {BATCH}, width {WIDTH}, b={TRIALS}, beta={BETA}, party 1",
        "calls": args.calls,
        "repeats": args.repeats,
    }
    for parties in (4, 16):
        report[f"M={parties}"] = measure(parties, args.calls, args.repeats)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
