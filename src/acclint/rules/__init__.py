"""The rule set: one module per category, each exporting RULES."""

from __future__ import annotations

from acclint.rules import contiguity, debug_tooling, determinism, framework_default, fused_op, mixed_precision, seed
from acclint.rules import deterministic_ops, file_order, grad_clipping, transfer_to_npu


def all_rules() -> list:
    rules = [*seed.RULES, *determinism.RULES, *fused_op.RULES, *contiguity.RULES, *mixed_precision.RULES,
             *framework_default.RULES, *debug_tooling.RULES]
    rules += grad_clipping.RULES + deterministic_ops.RULES + file_order.RULES
    rules += transfer_to_npu.RULES
    return sorted(rules, key=lambda r: r.code)
