"""Exact frame bytes of a tree's gradients (99% of SecureBoost's traffic) at any row count.

A ``BoostGradients`` frame carries one fixed-width ciphertext per training row, so its size does
not depend on what the ciphertexts hold: this script builds the frame with zero bytes in place of
the ciphertexts (no encryption) and encodes it with vfl's wire encoder, the same call the
transport's ledger counts. For each ``--rows`` it records the frame's bytes and whether the
frame exceeds the wire's default frame limit. It checks that the size is ``header + width N``
(one constant header for every ``N``), and, for the measured runs under ``--check`` (the
``bench_boost_scaling.py`` JSON files), that the ledger's count of ``BoostGradients`` bytes is
the encoder's count times the number of passive holders.

    .venv/bin/python bench/bench_boost_bytes.py --rows 10000 30000 100000 300000 1000000 \\
        --check bench/results/secureboost/scaling_2000 bench/results/secureboost/growth/rows_w1 \\
        --out bench/results/secureboost/growth/bytes_gradients.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from vfl.boost.fixed_point import SLOT_BITS
from vfl.boost.wire_messages import BoostGradients
from vfl.wire.frames import DEFAULT_MAX_BYTES, encode

CIPHERTEXT_BYTES = 512
"""One ciphertext modulo ``n^2`` of a 2048-bit key."""


def gradients_frame_bytes(rows: int, width: int = CIPHERTEXT_BYTES) -> int:
    """Bytes of the encoded ``BoostGradients`` frame for ``rows`` rows (content-independent)."""
    return len(encode(BoostGradients(1, SLOT_BITS, width, bytes(width * rows)), sender=1))


def check_measured(folder: Path) -> list[dict[str, Any]]:
    """Per measured run: ledger bytes against the encoder's count times the passive holders."""
    checks = []
    for path in sorted(folder.glob("*.json")):
        result = json.loads(path.read_text())["result"]
        passives = result["holders"] - 1
        ledger = result["per_tree"][0]["bytes_by_kind"]["BoostGradients"]
        counted = passives * gradients_frame_bytes(result["rows"])
        checks.append(
            {
                "file": path.name,
                "rows": result["rows"],
                "passive_holders": passives,
                "ledger": ledger,
                "encoder": counted,
                "equal": ledger == counted,
            }
        )
    return checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--check", type=Path, nargs="*", default=[])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.out.exists():
        print(f"{args.out} exists: kept (give another --out to measure afresh)")
        return
    sizes = {n: gradients_frame_bytes(n) for n in args.rows}
    headers = {size - CIPHERTEXT_BYTES * n for n, size in sizes.items()}
    if len(headers) != 1:
        raise SystemExit(f"frame size is not header + {CIPHERTEXT_BYTES} N: headers {headers}")
    checks = [c for folder in args.check for c in check_measured(folder)]
    if not all(c["equal"] for c in checks):
        raise SystemExit(f"ledger and encoder disagree: {checks}")
    result = {
        "ciphertext_bytes": CIPHERTEXT_BYTES,
        "header_bytes": headers.pop(),
        "frame_limit_bytes": DEFAULT_MAX_BYTES,
        "frames": [
            {"rows": n, "bytes": size, "over_frame_limit": size > DEFAULT_MAX_BYTES}
            for n, size in sizes.items()
        ],
        "measured_checks": checks,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for frame in result["frames"]:
        print(frame)
    print(f"{len(checks)} measured runs agree with the encoder")


if __name__ == "__main__":
    main()
