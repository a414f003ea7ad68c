"""The rule set: one module per category, each exporting RULES."""

from __future__ import annotations

from acclint.rules import (amp_protocol, api_difference, cast_buffers, contiguity, data_loading, debug_tooling,
                           determinism, deterministic_ops, dtype_drift, dtype_flow, file_order, float32_precision,
                           framework_default, fused_op, grad_clipping, launch_flags, master_weights, misspelled,
                           mixed_precision, model_config, npu_modes, parallel, seed, transfer_to_npu)

# One module per family of checks; each exports RULES.
_FAMILIES = (seed, determinism, deterministic_ops, file_order, misspelled, fused_op, launch_flags, contiguity,
             mixed_precision, float32_precision, amp_protocol, dtype_flow, dtype_drift, master_weights, cast_buffers,
             npu_modes, grad_clipping, transfer_to_npu, framework_default, api_difference, debug_tooling, model_config,
             data_loading, parallel)


def all_rules() -> list:
    rules = [rule for family in _FAMILIES for rule in family.RULES]
    return sorted(rules, key=lambda r: r.code)
