"""Computation lightweighting (LVFL): structured pruning of bottom models, FLOPs, ratio schedules.

See ``docs/pruning.md``. A round of training uses it like this: the party asks its
``ProgressivePruner`` to ``step`` with the round's ``α_k^t`` (from a ``vfl.schedules`` ratio
schedule); when a smaller model comes back, it swaps in ``pruned.model`` and
``rebuild_optimizer(...)``.
"""

from vfl.prune.chain import Link, layer_chain, prunable_links, weighted_links
from vfl.prune.flops import (
    LayerCost,
    ModelCost,
    conv2d_output_size,
    count_params,
    flops_per_sample,
    model_cost,
    pool2d_output_size,
)
from vfl.prune.optimizer import rebuild_optimizer, slice_optimizer_state
from vfl.prune.progressive import ProgressivePruner
from vfl.prune.structured import (
    ParamSlice,
    PrunedModel,
    kept_count,
    prune_model,
    prune_units,
    select_units,
    top_units,
    unit_scores,
    unit_widths,
)

__all__ = [
    "LayerCost",
    "Link",
    "ModelCost",
    "ParamSlice",
    "ProgressivePruner",
    "PrunedModel",
    "conv2d_output_size",
    "count_params",
    "flops_per_sample",
    "kept_count",
    "layer_chain",
    "model_cost",
    "pool2d_output_size",
    "prunable_links",
    "prune_model",
    "prune_units",
    "rebuild_optimizer",
    "select_units",
    "slice_optimizer_state",
    "top_units",
    "unit_scores",
    "unit_widths",
    "weighted_links",
]
