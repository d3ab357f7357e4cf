"""Time one round of secure aggregation of PBM counts: mask, pack, unpack, unmask.

For each M in ``--parties`` and each embedding width P in ``--dims`` (batch B = ``--batch``,
counts in ``{0..b}`` with b = ``--max-count``, k = ceil(log2(M b + 1))), it reports the median
over ``--repeats`` rounds of:

- ``party_mask_ms`` / ``party_pack_ms``: one party's ``mask`` / ``encode_masked`` (parties run
  in parallel, so their sum is the per-round cost on a party's critical path);
- ``server_unpack_ms`` / ``server_unmask_ms``: ``decode_masked`` of all M payloads / ``unmask``
  (the server's cost);
- ``round_ms``: all M parties one after another plus the server (what the simulator pays);
- ``setup_ms``: the one-time key agreement (M key pairs, M (M - 1) X25519 + HKDF), median of 3;
- ``bytes_per_party``: the payload size, ``ceil(B P k / 8)``.

    .venv/bin/python bench/bench_secagg.py [--parties 4 16] [--dims 32 64] [--repeats 21]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

from vfl.secagg import (
    PartyState,
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


def connect(num_parties: int, max_count: int) -> tuple[ServerState, dict[int, PartyState]]:
    params = make_params(run_id=b"bench", party_ids=range(1, num_parties + 1), max_count=max_count)
    parties = {i: setup_party(params, party_id=i) for i in params.party_ids}
    server = relay_public_keys(ServerState(params), {i: p.public_key for i, p in parties.items()})
    return server, {i: share_keys(p, server.directory) for i, p in parties.items()}


def one_round(
    server: ServerState, parties: dict[int, PartyState], counts: np.ndarray, round: int
) -> dict[str, float]:
    """Seconds per step of one round; the party steps are summed over all M parties."""
    bits = server.params.bits
    seconds = dict.fromkeys(("mask", "pack", "unpack", "unmask"), 0.0)
    payloads = {}
    for i, state in parties.items():
        start = time.perf_counter()
        parties[i], masked = mask(state, counts[i - 1], round=round)
        middle = time.perf_counter()
        payloads[i] = encode_masked(masked, bits=bits)
        seconds["mask"] += middle - start
        seconds["pack"] += time.perf_counter() - middle
    start = time.perf_counter()
    blocks = {i: decode_masked(p, shape=counts.shape[1:], bits=bits) for i, p in payloads.items()}
    middle = time.perf_counter()
    total = unmask(server, blocks)
    seconds["unpack"] = middle - start
    seconds["unmask"] = time.perf_counter() - middle
    assert total.tolist() == counts.sum(axis=0).tolist()
    return seconds


def bench(
    num_parties: int, dim: int, *, batch: int, max_count: int, repeats: int
) -> dict[str, float]:
    setups = []
    for _ in range(3):
        start = time.perf_counter()
        server, parties = connect(num_parties, max_count)
        setups.append(time.perf_counter() - start)
    counts = np.random.default_rng(0).integers(
        0, max_count, size=(num_parties, batch, dim), endpoint=True
    )
    one_round(server, parties, counts, round=0)  # warm-up
    times = [one_round(server, parties, counts, round=r) for r in range(1, repeats + 1)]

    def median_ms(step: str, per_party: bool = False) -> float:
        value = statistics.median(t[step] for t in times) / (num_parties if per_party else 1)
        return round(value * 1e3, 3)

    return {
        "parties": num_parties,
        "batch": batch,
        "dim": dim,
        "bits": server.params.bits,
        "bytes_per_party": -(-batch * dim * server.params.bits // 8),
        "party_mask_ms": median_ms("mask", per_party=True),
        "party_pack_ms": median_ms("pack", per_party=True),
        "server_unpack_ms": median_ms("unpack"),
        "server_unmask_ms": median_ms("unmask"),
        "round_ms": round(statistics.median(sum(t.values()) for t in times) * 1e3, 3),
        "setup_ms": round(statistics.median(setups) * 1e3, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--dims", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--max-count", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    rows = [
        bench(m, p, batch=args.batch, max_count=args.max_count, repeats=args.repeats)
        for m in args.parties
        for p in args.dims
    ]
    print(json.dumps({"machine": platform.platform(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
