"""MindSpore data parallel (msrun, mpirun): the gradient mean capture's own step must take.

A MindSpore training loop averages the ranks' gradients itself (nn.DistributedGradReducer, or
TrainOneStepCell under the DATA_PARALLEL context). capture drives the step with value_and_grad,
so it takes that mean too; otherwise each replica would step with its own gradients. The ranks'
fingerprints (one file per rank) are merged into one when loaded (see rank_files).
"""

from __future__ import annotations

from typing import Any, Callable

# Parallel modes whose gradients are reduced over the ranks with all parameters replicated.
DATA_PARALLEL_MODES = ("data_parallel",)


def data_parallel_reducer(ms: Any, weights: list[Any]) -> Callable[[tuple], tuple] | None:
    """The gradient reducer of a MindSpore data-parallel job of several ranks, else None."""
    if ms.get_auto_parallel_context("parallel_mode") not in DATA_PARALLEL_MODES:
        return None
    from mindspore.communication import get_group_size

    size = get_group_size()
    if size < 2:
        return None
    mean = bool(ms.get_auto_parallel_context("gradients_mean"))
    return ms.nn.DistributedGradReducer(weights, mean=mean, degree=size)
