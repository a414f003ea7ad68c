"""The readable verdict: one line per stage in the guides' order, then where to look first.

A stage whose differences all follow from an earlier one shows its numbers with "(follows from
<that stage>)"; a stage with a cause lists it, and the forward stage shows the first diverging
module with its statistics on both sides and the last module that matched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acclint.runtime_checks.compare.forward_compare import stats_lines
from acclint.runtime_checks.compare.notes import first_cause_stage
from acclint.runtime_checks.model.stages import KIND_STAGES, STAGES, TITLES

if TYPE_CHECKING:
    from acclint.runtime_checks.compare.compare import ComparisonResult, StageOutcome

# First stage with a cause -> where to look.
HINTS = {
    "data": "the batches differ: feed both sides the same samples (preprocessing, tokenizer, shuffling, "
    "padding) before comparing anything downstream",
    "count": "the two models are not the same network: compare the layer definitions (widths, extra layers, tied weights)",
    "names": "names or shapes differ: add a mapping file for renamed layers, or fix the layer definitions",
    "frozen": "different parameters are frozen: align requires_grad on both sides",
    "optimizer": "the optimizers differ: align type, parameter groups and hyperparameters before reading any loss",
    "weights": "the runs start from different weights: seed both sides identically or use transfer_weights",
    "mode": "one model is not in training mode",
    "settings": "a module setting differs (norm eps, BatchNorm momentum, dropout, GELU approximation): "
    "pass it explicitly on both sides",
    "forward": "a module's output differs: start at the first diverging module",
    "loss": "the step-0 loss differs: the loss function (reduction, label smoothing, ignore index), code after "
    "the model's forward, or the data",
    "grads": "the gradients differ: the backward pass differs; start at the first diverging parameter",
    "update": "the update differs: the optimizer implementation (eps placement, bias correction, fused kernels) "
    "or loss scaling",
    "steps": "a later step differs: the lr schedule (warmup, decay) if the lr differs, "
    "else the data of later steps, dropout, or float noise the updates amplify",
    "env": "numerics settings differ: deterministic algorithms or TF32/HF32 flags",
}
# The earlier stages a hint may say match, when they were compared in full and did match.
HINT_CLAIMS = {
    "forward": ("weights", "settings", "data"),
    "loss": ("weights", "forward"),
    "grads": ("loss",),
    "update": ("loss", "grads"),
    "steps": ("loss", "grads", "update"),
}
SINGULAR_TITLES = {"step-0 loss", "forward", "optimizer", "training mode", "environment", "parameter count"}
# A cause that is its stage's exception: (stage, mismatch name) -> (what it is, where to look).
CAUSE_HINTS = {
    ("env", "seed"): ("seed", "the runs are seeded differently: the initial weights, the data order and the dropout masks "
    "all follow from the seed; seed both sides identically (or transfer the weights and feed the same batch)"),
    ("data", "<split>"): ("a different split", "the same samples reach the optimizer step in another split (micro-batch "
    "x accumulation, or rank x micro-batch): align the split, or check that each micro-batch's loss is scaled by its "
    "share of the step; the differences after it follow from the split"),
    ("names", "<model>"): ("different models", "the two fingerprints are of different networks: capture the same model on both sides "
    "(a mapping file helps only when the layers are the same under other names)"),
}

LINES_PER_STAGE = 8


def render_text(result: "ComparisonResult") -> str:
    width = max(len(title) for _, title in STAGES) + 8  # "10. " + title + " .."
    lines = ["acclint compare", f"  left : {result.left.label}", f"  right: {result.right.label}", ""]
    for number, outcome in enumerate(result.stages, 1):
        head = f"{number:2d}. {outcome.title} ".ljust(width, ".")
        lines.append(f"{head} {_status(outcome)}")
        lines.extend(_details(outcome))
    lines.append("")
    tolerance = result.tolerances
    if result.ok:
        unrecorded = [o.title for o in result.stages if o.skipped]
        partly = [o.title for o in result.stages if o.partial]
        extra = f"; not compared: {', '.join(unrecorded)}" if unrecorded else ""
        extra += f"; compared by statistics only: {', '.join(partly)}" if partly else ""
        lines.append(f"Verdict: PARITY ({tolerance}{extra})")
        return "\n".join(lines)
    causes, following = len(result.causes), len(result.mismatches) - len(result.causes)
    first = first_cause_stage(result)
    also = f", and {_follow(following)} from {'it' if causes == 1 else 'them'}" if following else ""
    special = CAUSE_HINTS.get((first.stage, result.causes[0].name))
    named = f" ({special[0]})" if special else ""
    lines.append(f"Verdict: MISMATCH, {causes} difference{'s' if causes != 1 else ''}{also} ({tolerance}); "
                 f"fix '{first.title}'{named} first")
    lines.append(f"Hint: {_hint(result, first)}")
    lines.extend(f"Note: {note}" for note in result.notes)
    return "\n".join(lines)


def _hint(result: "ComparisonResult", first: "StageOutcome") -> str:
    """Where to look, saying which earlier stages match only of those that were compared in full."""
    special = CAUSE_HINTS.get((first.stage, result.causes[0].name))
    if special:
        return special[1]
    outcomes = {o.stage: o for o in result.stages}
    matched = [TITLES[stage] for stage in HINT_CLAIMS.get(first.stage, ())
               if outcomes[stage].compared_fully and not outcomes[stage].mismatches]
    if not matched:
        return HINTS[first.stage]
    listed = matched[0] if len(matched) == 1 else ", ".join(matched[:-1]) + f" and {matched[-1]}"
    singular = len(matched) == 1 and matched[0] in SINGULAR_TITLES
    return f"{listed} {'matches' if singular else 'match'}, but {HINTS[first.stage]}"


def _status(outcome: "StageOutcome") -> str:
    causes = [m for m in outcome.mismatches if m.is_cause]
    if causes:
        following = len(outcome.mismatches) - len(causes)
        return f"MISMATCH ({len(causes)}" + (f", and {_follow(following)} from it)" if following else ")")
    if outcome.mismatches:
        origin = TITLES[KIND_STAGES[outcome.mismatches[0].consequence_of]]
        return f"differs: {outcome.summary or outcome.mismatches[0].message} (follows from {origin})"
    if outcome.skipped:
        return outcome.skipped
    if outcome.partial:
        return f"partly compared: {outcome.summary} ({outcome.partial})"
    return "ok" + (f": {outcome.summary}" if outcome.summary else "")


def _details(outcome: "StageOutcome") -> list[str]:
    causes = [m for m in outcome.mismatches if m.is_cause]
    lines = []
    for mismatch in causes[:LINES_PER_STAGE]:
        lines.append(f"      - [{mismatch.kind}] {mismatch.message}")
        if mismatch.kind == "activation":
            lines.extend(f"          {line}" for line in stats_lines(mismatch))
    hidden = len(causes) - LINES_PER_STAGE
    if hidden > 0:
        lines.append(f"      ... and {hidden} more (all are listed by --format json)")
    if outcome.stage == "forward" and outcome.mismatches:
        first = outcome.mismatches[0]
        if not first.is_cause:  # the first diverging module, itself a consequence: still name it
            lines.append(f"      - [{first.kind}] {first.message}")
            lines.extend(f"          {line}" for line in stats_lines(first))
        if first.is_cause and outcome.summary:
            lines.append(f"      {outcome.summary}")
    return lines


def _follow(count: int) -> str:
    return f"{count} that follow{'s' if count == 1 else ''}"
