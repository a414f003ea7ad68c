"""The rule set: one module per category, each exporting RULES."""

from __future__ import annotations

from acclint.rules import (contiguity, debug_tooling, determinism, framework_default, fused_op, launch_flags,
                           mixed_precision, npu_modes, seed)


def all_rules() -> list:
    rules = [*seed.RULES, *determinism.RULES, *fused_op.RULES, *contiguity.RULES, *mixed_precision.RULES,
             *npu_modes.RULES, *framework_default.RULES, *debug_tooling.RULES, *launch_flags.RULES]
    return sorted(rules, key=lambda r: r.code)
