"""The ``[boost]`` section: what a tree-boosting protocol (``protocol.name = "secureboost"``) grows.

The keys are ``vfl.boost.BoostParams``' names, which are XGBoost's (``num_boost_round``,
``max_depth``, ``eta``, ``lambda``, ``gamma``, ``min_child_weight``, ``max_bin``, ``objective``,
``base_score``), so that a centralized XGBoost with the same values is the reference of a run;
``key_bits`` and ``workers`` say how the label holder encrypts. Each value is checked here, one
line per bad value, before any data is loaded; the section applies only to a protocol whose
registration names it (``vfl.config.protocols``), and is refused under any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from vfl.config.fields import OneOf, Range, Satisfies
from vfl.config.io import check
from vfl.config.section import Section, rule

BOOST_OBJECTIVES = ("binary:logistic", "reg:squarederror")
"""The objectives SecureBoost supports (XGBoost's names; ``vfl.boost.params.OBJECTIVES``)."""
MIN_KEY_BITS = 2048
"""The shortest Paillier modulus a run accepts (112-bit security, NIST SP 800-57)."""
MAX_KEY_BITS = 8192
MEAN_LABEL = 0.0
"""The ``base_score`` that means "the mean training label"."""


def _whole_bytes(bits: int) -> bool:
    return bits % 8 == 0


@dataclass(frozen=True)
class BoostConfig(Section):
    """Boosted trees (SecureBoost, ``docs/secureboost.md``); read only by ``secureboost``.

    Attributes:
        num_trees: Boosting rounds (XGBoost's ``num_boost_round``); one checkpoint per tree.
        max_depth: Depth of every tree; a root alone has depth 0.
        learning_rate: Shrinkage of every leaf weight (XGBoost's ``eta``).
        reg_lambda: L2 regularisation of leaf weights (XGBoost's ``lambda``).
        gamma: Least loss reduction a split must bring (XGBoost's ``min_split_loss``).
        min_child_weight: Least hessian sum in each child of a split.
        max_bin: Most bins per column (quantile cut points of each holder's own values).
        objective: ``binary:logistic`` (a binary task) or ``reg:squarederror``.
        base_score: The prediction before any tree, in the objective's output space (a
            probability for ``binary:logistic``); 0 takes the mean training label.
        key_bits: Size of the label holder's Paillier modulus (a fresh key from the operating
            system's randomness every run); at least 2048.
        workers: Processes the label holder encrypts and decrypts with (0: every core).
    """

    num_trees: Annotated[int, Range(ge=1, le=100_000)] = 10
    max_depth: Annotated[int, Range(ge=1, le=30)] = 3
    learning_rate: Annotated[float, Range(gt=0, le=1)] = 0.3
    reg_lambda: Annotated[float, Range(ge=0)] = 1.0
    gamma: Annotated[float, Range(ge=0)] = 0.0
    min_child_weight: Annotated[float, Range(ge=0)] = 1.0
    max_bin: Annotated[int, Range(ge=2, le=4096)] = 32
    objective: Annotated[str, OneOf(BOOST_OBJECTIVES)] = "binary:logistic"
    base_score: float = MEAN_LABEL
    key_bits: Annotated[
        int,
        Range(ge=MIN_KEY_BITS, le=MAX_KEY_BITS),
        Satisfies(_whole_bytes, "must be a multiple of 8 (whole bytes)", "multiple of 8"),
    ] = MIN_KEY_BITS
    workers: Annotated[int, Range(ge=0, le=1024, note="0 = every core")] = 0


@rule(BoostConfig)
def _base_score_fits_the_objective(boost: BoostConfig) -> None:
    check(
        boost.objective != "binary:logistic"
        or boost.base_score == MEAN_LABEL
        or 0.0 < boost.base_score < 1.0,
        "base_score",
        f"binary:logistic needs a probability strictly between 0 and 1 (or 0 for the mean"
        f" label), got {boost.base_score}",
    )
