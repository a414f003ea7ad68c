"""The readable verdict: one line per stage in the guides' order, then where to look first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acclint.runtime_checks.stages import STAGES

if TYPE_CHECKING:
    from acclint.runtime_checks.compare import ComparisonResult

# First stage that differs -> where to look.
HINTS = {
    "count": "the two models are not the same network: compare the layer definitions (widths, extra layers, tied weights)",
    "names": "names or shapes differ: add a mapping file for renamed layers, or fix the layer definitions",
    "frozen": "different parameters are frozen: align requires_grad on both sides",
    "optimizer": "the optimizers differ: align type, parameter groups and hyperparameters before reading any loss",
    "weights": "the runs start from different weights: seed both sides identically or use transfer_weights",
    "mode": "one model is not in training mode",
    "loss": "weights match but the step-0 loss differs: the forward pass differs (operators, precision, dropout, data)",
    "grads": "the step-0 loss matches but the gradients differ: the backward pass differs; start at the first diverging parameter",
    "update": "loss and gradients match but the update differs: the optimizer implementation (eps placement, "
    "bias correction, fused kernels) or loss scaling",
    "env": "numerics settings differ: deterministic algorithms or TF32/HF32 flags",
}

LINES_PER_STAGE = 8


def render_text(result: "ComparisonResult") -> str:
    width = max(len(title) for _, title in STAGES) + 8  # "10. " + title + " .."
    lines = ["acclint compare", f"  left : {result.left.label}", f"  right: {result.right.label}", ""]
    for number, outcome in enumerate(result.stages, 1):
        head = f"{number:2d}. {outcome.title} ".ljust(width, ".")
        if outcome.mismatches:
            status = f"MISMATCH ({len(outcome.mismatches)})"
        elif outcome.skipped:
            status = outcome.skipped
        else:
            status = "ok" + (f": {outcome.summary}" if outcome.summary else "")
        lines.append(f"{head} {status}")
        for mismatch in outcome.mismatches[:LINES_PER_STAGE]:
            lines.append(f"      - [{mismatch.kind}] {mismatch.message}")
        hidden = len(outcome.mismatches) - LINES_PER_STAGE
        if hidden > 0:
            lines.append(f"      ... and {hidden} more (all are listed by --format json)")
    lines.append("")
    tolerance = f"rtol {result.rtol:g}, atol {result.atol:g}, update rtol {result.update_rtol:g}"
    if result.ok:
        skipped = [o.title for o in result.stages if o.skipped]
        extra = f"; not compared: {', '.join(skipped)}" if skipped else ""
        lines.append(f"Verdict: PARITY ({tolerance}{extra})")
    else:
        first = next(o for o in result.stages if o.mismatches)
        count = len(result.mismatches)
        lines.append(f"Verdict: MISMATCH, {count} difference{'s' if count != 1 else ''} ({tolerance}); "
                     f"fix '{first.title}' first")
        lines.append(f"Hint: {HINTS[first.stage]}")
    return "\n".join(lines)
