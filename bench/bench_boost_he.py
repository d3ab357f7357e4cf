"""Paillier from ``phe`` + gmpy2 (what ``vfl.boost`` uses) against SecretFlow's HEU (``sf-heu``).

Per-operation cost at one key size, every implementation measured in the same process, rounds
alternating (the order rotates each round), on the CPU cores given by ``--cpus`` (default: one
core, set before HEU starts its thread pool, so HEU's batch calls cannot use more cores than
``phe`` does). Operations, on packed-gradient-sized plaintexts (``< 2^110``):

- ``encrypt``: vfl's label-holder encryption (``encrypt_all_private``: the obfuscator computed
  with the primes, CRT) for ``phe``; ``encrypt_public`` is ``phe``'s public-key encryption;
- ``decrypt``; ``add`` (ciphertext + ciphertext); ``scalar_mul`` (ciphertext times ``2^107``,
  the shift ``vfl.boost`` packs histogram slots with); ``rerandomize`` (times a fresh ``Enc(0)``).

HEU's schemes: ``ZPaillier`` (Paillier with the Damgard-Jurik-Nielsen fixed-base obfuscator),
``FPaillier`` (textbook Paillier), ``OU`` (Okamoto-Uchiyama), through its scalar API
(``heu.phe``) and, where named ``-batch``, its array API (``heu.numpy``). Ciphertext sizes are
the bytes each library's own serialization takes, and vfl's wire width for ``phe``.
One JSON file: ``--out`` (an existing one is kept: the run stops).

    .venv/bin/pip install --no-deps sf-heu==0.5.2b0
    nice .venv/bin/python bench/bench_boost_he.py --count 200 --rounds 7 \\
        --out bench/results/secureboost/he/he_2048.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import statistics
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import gmpy2
import numpy as np

from vfl.boost.paillier import (
    MIN_SECURE_KEY_BITS,
    KeyPair,
    decrypt_all,
    encrypt_all,
    encrypt_all_private,
)

SHIFT = 1 << 107
PLAINTEXT_BITS = 110
OPERATIONS = ["encrypt", "encrypt_public", "decrypt", "add", "scalar_mul", "rerandomize"]
Batch = Callable[[], Any]


class PheBackend:
    """``vfl.boost``'s own path: ``phe`` + gmpy2, the label holder's CRT encryption."""

    name = "phe"

    def __init__(self, bits: int, plaintexts: list[int]) -> None:
        # Keys under 2048 bits only to compare with systems that use them (FATE 1.x: 1024).
        self.keys = KeyPair.generate(bits, insecure_test_key=bits < MIN_SECURE_KEY_BITS)
        self.n, self.p, self.q = self.keys.public.n, self.keys.p, self.keys.q
        self.n_square = gmpy2.mpz(self.keys.public.n_square)
        self.plaintexts = plaintexts
        self.ciphertexts = [gmpy2.mpz(c) for c in encrypt_all(self.n, plaintexts)]
        self.ciphertext_bytes = self.keys.public.ciphertext_size
        self.public_key_bytes = len(self.keys.public.to_bytes())

    def operations(self) -> dict[str, Batch]:
        n2, cts, ms = self.n_square, self.ciphertexts, self.plaintexts
        zero = self.keys.public.encrypt_zero
        return {
            "encrypt": lambda: encrypt_all_private(self.n, self.p, self.q, ms),
            "encrypt_public": lambda: encrypt_all(self.n, ms),
            "decrypt": lambda: decrypt_all(self.n, self.p, self.q, cts),
            "add": lambda: [c * c % n2 for c in cts],
            "scalar_mul": lambda: [gmpy2.powmod(c, SHIFT, n2) for c in cts],
            "rerandomize": lambda: [c * zero() % n2 for c in cts],
        }

    def check(self) -> None:
        ms, n2 = self.plaintexts, self.n_square
        fresh = encrypt_all_private(self.n, self.p, self.q, ms)
        assert decrypt_all(self.n, self.p, self.q, fresh) == ms
        added = [int(a * b % n2) for a, b in zip(fresh, self.ciphertexts, strict=True)]
        assert decrypt_all(self.n, self.p, self.q, added) == [2 * m for m in ms]
        shifted = [int(gmpy2.powmod(c, SHIFT, n2)) for c in self.ciphertexts]
        assert decrypt_all(self.n, self.p, self.q, shifted) == [m * SHIFT for m in ms]


class HeuScalarBackend:
    """HEU's scalar API (``heu.phe``): one Python call per ciphertext."""

    def __init__(self, schema: str, bits: int, plaintexts: list[int]) -> None:
        # HEU is imported only here, after main() has pinned the CPUs: its threads inherit that.
        from heu import phe

        self.name = f"heu-{schema}"
        self.kit = phe.setup(getattr(phe.SchemaType, schema), bits)
        self.encryptor, self.decryptor = self.kit.encryptor(), self.kit.decryptor()
        self.evaluator = self.kit.evaluator()
        self.plaintexts = plaintexts
        self.ciphertexts = [self.encryptor.encrypt_raw(m) for m in plaintexts]
        self.ciphertext_bytes = statistics.median(len(c.serialize()) for c in self.ciphertexts)
        self.public_key_bytes = len(self.kit.public_key().serialize())

    def operations(self) -> dict[str, Batch]:
        enc, dec, ev = self.encryptor, self.decryptor, self.evaluator
        cts, ms = self.ciphertexts, self.plaintexts
        return {
            "encrypt": lambda: [enc.encrypt_raw(m) for m in ms],
            "decrypt": lambda: [dec.decrypt_raw(c) for c in cts],
            "add": lambda: [ev.add(c, c) for c in cts],
            "scalar_mul": lambda: [shifted(ev, c) for c in cts],
            "rerandomize": lambda: [ev.add(c, enc.encrypt_raw(0)) for c in cts],
        }

    def check(self) -> None:
        dec, ev, ms = self.decryptor, self.evaluator, self.plaintexts
        assert [dec.decrypt_raw(c) for c in self.ciphertexts] == ms
        assert [dec.decrypt_raw(ev.add(c, c)) for c in self.ciphertexts] == [2 * m for m in ms]
        times_shift = [dec.decrypt_raw(shifted(ev, c)) for c in self.ciphertexts]
        assert times_shift == [m * SHIFT for m in ms]


class HeuBatchBackend:
    """HEU's array API (``heu.numpy``): one call per batch, the loop in C++."""

    def __init__(self, schema: str, bits: int, plaintexts: list[int]) -> None:
        from heu import numpy as hnp
        from heu import phe

        self.name = f"heu-{schema}-batch"
        self.kit = hnp.setup(getattr(phe.SchemaType, schema), bits)
        self.encryptor, self.decryptor = self.kit.encryptor(), self.kit.decryptor()
        self.evaluator = self.kit.evaluator()
        self.plaintexts = plaintexts
        self.array = self.kit.array(np.array(plaintexts, dtype=object))
        self.zeros = self.kit.array(np.array([0] * len(plaintexts), dtype=object))
        self.shifts = self.kit.array(np.array([SHIFT] * len(plaintexts), dtype=object))
        self.ciphertexts = self.encryptor.encrypt(self.array)
        self.ciphertext_bytes = len(self.ciphertexts.serialize()) / len(plaintexts)
        self.public_key_bytes = len(self.kit.public_key().serialize())

    def operations(self) -> dict[str, Batch]:
        enc, dec, ev, cts = self.encryptor, self.decryptor, self.evaluator, self.ciphertexts
        return {
            "encrypt": lambda: enc.encrypt(self.array),
            "decrypt": lambda: dec.decrypt(cts),
            "add": lambda: ev.add(cts, cts),
            "scalar_mul": lambda: ev.mul(cts, self.shifts),
            "rerandomize": lambda: ev.add(cts, enc.encrypt(self.zeros)),
        }

    def check(self) -> None:
        dec, ev, ms = self.decryptor, self.evaluator, self.plaintexts
        assert [int(v) for v in dec.decrypt(self.ciphertexts).to_numpy()] == ms
        doubled = dec.decrypt(ev.add(self.ciphertexts, self.ciphertexts)).to_numpy()
        assert [int(v) for v in doubled] == [2 * m for m in ms]
        shifted = dec.decrypt(ev.mul(self.ciphertexts, self.shifts)).to_numpy()
        assert [int(v) for v in shifted] == [m * SHIFT for m in ms]


def shifted(evaluator: Any, ciphertext: Any) -> Any:
    """``ciphertext`` times ``2^107`` through HEU's scalar API, whose multiplier is an int64."""
    return evaluator.mul(evaluator.mul(ciphertext, 1 << 54), 1 << 53)


def make_backend(name: str, bits: int, plaintexts: list[int]) -> Any:
    if name == "phe":
        return PheBackend(bits, plaintexts)
    schema, _, batch = name.removeprefix("heu-").partition("-")
    cls = HeuBatchBackend if batch == "batch" else HeuScalarBackend
    return cls(schema, bits, plaintexts)


def timed(batch: Batch) -> tuple[float, float]:
    """Wall and CPU seconds of one call (CPU counts every thread of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    batch()
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(backends: list[Any], rounds: int, count: int) -> dict[str, dict[str, Any]]:
    """Per backend and operation: seconds per item of every round (wall and CPU)."""
    table = {b.name: {op: {"wall": [], "cpu": []} for op in b.operations()} for b in backends}
    for round_index in range(rounds):
        turn = round_index % len(backends)
        for backend in backends[turn:] + backends[:turn]:
            for op, batch in backend.operations().items():
                wall, cpu = timed(batch)
                table[backend.name][op]["wall"].append(wall / count)
                table[backend.name][op]["cpu"].append(cpu / count)
    return table


def ratios(table: dict[str, dict[str, Any]], base: str) -> dict[str, dict[str, float]]:
    """Median over rounds of (base's seconds / backend's seconds): above 1 means faster."""
    out: dict[str, dict[str, float]] = {}
    for name, ops in table.items():
        out[name] = {}
        for op, series in ops.items():
            reference = table[base].get(op, table[base]["encrypt"])["wall"]
            pairs = zip(reference, series["wall"], strict=True)
            out[name][op] = statistics.median(r / s for r, s in pairs)
    return out


def installed_version(package: str) -> str | None:
    """``package``'s installed version, None when it is not installed (sf-heu is optional)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, default=2048)
    parser.add_argument("--count", type=int, default=200, help="operations per timed batch")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cpus", type=int, nargs="+", default=[0], help="CPU cores to run on")
    parser.add_argument(
        "--backends",
        nargs="+",
        default=[
            "phe",
            "heu-ZPaillier",
            "heu-FPaillier",
            "heu-OU",
            "heu-ZPaillier-batch",
            "heu-OU-batch",
        ],
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.out.exists():
        print(f"{args.out} exists: kept (give another --out to measure afresh)")
        return
    os.sched_setaffinity(0, set(args.cpus))  # before HEU starts its threads
    plaintexts = [secrets.randbits(PLAINTEXT_BITS) for _ in range(args.count)]
    backends = [make_backend(name, args.bits, plaintexts) for name in args.backends]
    for backend in backends:
        backend.check()
    load_before = os.getloadavg()
    table = measure(backends, args.rounds, args.count)
    result = {
        "meta": {
            "machine": platform.platform(),
            "processor": platform.processor(),
            "python": platform.python_version(),
            "cpus_used": sorted(args.cpus),
            "cpus_on_machine": os.cpu_count(),
            "versions": {p: installed_version(p) for p in ("phe", "gmpy2", "sf-heu")},
            "bits": args.bits,
            "count": args.count,
            "rounds": args.rounds,
            "plaintext_bits": PLAINTEXT_BITS,
            "load_average_before_after": [load_before, os.getloadavg()],
        },
        "sizes": {
            b.name: {"ciphertext_bytes": b.ciphertext_bytes, "public_key_bytes": b.public_key_bytes}
            for b in backends
        },
        "seconds_per_item": table,
        "median_seconds_per_item": {
            name: {op: statistics.median(s["wall"]) for op, s in ops.items()}
            for name, ops in table.items()
        },
        "speedup_over_phe": ratios(table, "phe"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for name, ops in result["median_seconds_per_item"].items():
        cells = "  ".join(f"{op} {1e3 * s:.3f} ms" for op, s in ops.items())
        print(f"{name:22s} {cells}", flush=True)


if __name__ == "__main__":
    main()
