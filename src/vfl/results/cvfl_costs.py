"""The C-VFL paper's cost and time formulas, computed beside the ledger's measured bytes.

The ledger is the truth: it records the encoded frames. These formulas exist to cross-check it and
to compare with the tables of C-VFL (Castiglia et al., ICML 2022, Section 5, Tables 2-5):

- literal accounting (section 4.2): every round M uploads of B·P_m components and M downloads of
  all embeddings plus the server model: ``b·[(M+1)·B·ΣP_m + M·|θ0|]`` bits;
- the accounting that reproduces the published tables (section 4.3, the authors' code):
  ``b·(2·P·B·M² + |θ0|·M)`` bits, with equal P_m;
- time to target (section 7): ``rounds × (Q·t_compute + t_c)`` for a round-trip latency t_c.
"""

from __future__ import annotations

from collections.abc import Sequence


def literal_bits_per_round(
    *, bits: int, batch: int, widths: Sequence[int], server_parameters: int
) -> int:
    """Spec section 4.2: ``b·[(M+1)·B·ΣP_m + M·|θ0|]`` (shared labels, C-VFL Algorithm 1)."""
    parties = len(widths)
    return bits * ((parties + 1) * batch * sum(widths) + parties * server_parameters)


def reproduction_bits_per_round(
    *, bits: int, batch: int, width: int, parties: int, server_parameters: int
) -> int:
    """Spec section 4.3: ``b·(2·P·B·M² + |θ0|·M)``, the formula behind the paper's tables."""
    return bits * (2 * width * batch * parties**2 + server_parameters * parties)


def private_labels_bits_per_round(
    *, bits: int, gradient_bits: int, batch: int, widths: Sequence[int]
) -> int:
    """Algorithm 2 / split learning: B·ΣP_m components up at ``bits``, back at ``gradient_bits``."""
    return (bits + gradient_bits) * batch * sum(widths)


def time_to_target(
    *, rounds: float, local_steps: int, compute_seconds: float, latency_seconds: float
) -> float:
    """Spec section 7: ``rounds × (Q·t_compute + t_c)``; parties compute in parallel.

    Example:
        >>> round(time_to_target(rounds=4662, local_steps=10, compute_seconds=0.010,
        ...                      latency_seconds=0.010), 2)
        512.82
    """
    return rounds * (local_steps * compute_seconds + latency_seconds)
