"""Print the epsilon tables of docs/privacy.md (Markdown) from the accountant's pure functions.

.venv/bin/python tools/privacy_table.py > /tmp/privacy_tables.md   (a minute or two on one core)
.venv/bin/python tools/privacy_table.py --certify-all   (also certifies M b > 1024: minutes more)

Three tables: the spec's per-coordinate RDP table beside our exact worst case (with the
certificate), what the paper's CIFAR-10 grid costs, and what our Fashion-MNIST runs cost.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from vfl.privacy import (
    DEFAULT_ORDERS,
    compose_rdp,
    pbm_rdp,
    rdp_to_epsilon,
    relaxation_bound,
    search_worst_case,
)

DELTA = 1e-5
BETAS = (0.05, 0.15, 0.25)
CERTIFY_LIMIT = 1024  # M b above this makes the relaxation bound take minutes
SPEC_TABLE = {  # spec pbm.md §2.6 B: (M, b) -> per beta, (alpha = 2, alpha = 8)
    (4, 16): ((0.163, 0.654), (1.69, 6.14), (6.43, 15.0)),
    (4, 64): ((0.651, 2.62), (6.74, 24.6), (25.7, 59.8)),
    (4, 256): ((2.60, 10.5), (26.9, 98.3), (103, 239)),
    (6, 4): ((0.0271, 0.110), (0.279, 1.18), (1.08, 3.41)),
    (6, 16): ((0.108, 0.439), (1.11, 4.70), (4.28, 13.6)),
    (6, 64): ((0.433, 1.75), (4.44, 18.8), (17.1, 54.6)),
    (12, 4): ((0.0135, 0.0546), (0.136, 0.605), (0.502, 2.49)),
    (12, 16): ((0.0540, 0.218), (0.544, 2.41), (1.99, 9.96)),
    (12, 64): ((0.216, 0.873), (2.17, 9.65), (7.93, 39.8)),
}


def certified(parties: int, trials: int, beta: float, orders: list[float], limit: int) -> str:
    """'yes' when the relaxation bound equals the search at ``orders`` and is attained."""
    if parties * trials > limit:
        return "not run"
    bound = relaxation_bound(trials=trials, beta=beta, parties=parties, orders=orders)
    found = search_worst_case(trials=trials, beta=beta, parties=parties, orders=orders)
    same = all(abs(a - b) <= 1e-9 * max(1.0, b) for a, b in zip(found.rdp, bound.rdp, strict=True))
    return "yes" if same and all(bound.attained) else "NO"


def spec_rows(limit: int) -> Iterable[str]:
    """The spec's lower bounds beside the exact worst case at alpha = 2 and 8."""
    yield "| M | b | β | spec α=2 | ours α=2 | spec α=8 | ours α=8 | worst inputs x/C | certified |"
    yield "|---|---|---|---|---|---|---|---|---|"
    for (parties, trials), cells in SPEC_TABLE.items():
        for beta, (spec2, spec8) in zip(BETAS, cells, strict=True):
            found = search_worst_case(trials=trials, beta=beta, parties=parties, orders=[2, 8])
            inputs = "all +1" if set(found.inputs[0]) == {1.0} else str(found.inputs[0])
            check = certified(parties, trials, beta, [2, 8], limit)
            yield (
                f"| {parties} | {trials} | {beta} | {spec2:.3g} | {found.rdp[0]:.5g} | {spec8:.3g}"
                f" | {found.rdp[1]:.5g} | {inputs} | {check} |"
            )


def epsilon(parties: int, trials: int, beta: float, dimension: int, epochs: int) -> str:
    """Epsilon and the optimal order for ``epochs`` shuffled passes."""
    curve = pbm_rdp(trials=trials, beta=beta, parties=parties, orders=DEFAULT_ORDERS)
    total = compose_rdp(per_coordinate=curve, dimension=dimension, uses=epochs)
    value, order = rdp_to_epsilon(orders=DEFAULT_ORDERS, rdp=total, delta=DELTA)
    return f"{value:.4g} (α={order:.4g})"


def cost_rows(
    parties_list: tuple[int, ...],
    trials_list: tuple[int, ...],
    dims: tuple[int, ...],
    *,
    epochs: int,
    limit: int,
) -> Iterable[str]:
    """Epsilon at delta = 1e-5 over a grid, one column per embedding width."""
    heads = " | ".join(f"ε, P={d}" for d in dims)
    yield f"| M | b | β | {heads} | certified per-coordinate worst case |"
    yield "|---|---|---|" + "---|" * (len(dims) + 1)
    for parties in parties_list:
        for trials in trials_list:
            for beta in BETAS:
                cells = " | ".join(epsilon(parties, trials, beta, d, epochs) for d in dims)
                check = certified(parties, trials, beta, [1.01, 1.1, 1.5, 2, 8, 32], limit)
                yield f"| {parties} | {trials} | {beta} | {cells} | {check} |"


def main() -> None:
    """Print the three tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--certify-all", action="store_true", help="certify every row")
    limit = 1 << 62 if parser.parse_args().certify_all else CERTIFY_LIMIT
    print("### The spec's table (lower bounds) and the exact worst case\n")
    print("\n".join(spec_rows(limit)))
    print("\n### CIFAR-10 grid of the paper: M=4, 600 epochs, δ=1e-5\n")
    print("\n".join(cost_rows((4,), (16, 64, 256), (1, 16), epochs=600, limit=limit)))
    print("\n### Our Fashion-MNIST runs: P=32, 10 epochs, δ=1e-5\n")
    print("\n".join(cost_rows((4, 7), (4, 16, 64, 256), (32,), epochs=10, limit=limit)))


if __name__ == "__main__":
    main()
