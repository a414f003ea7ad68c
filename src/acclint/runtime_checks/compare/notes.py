"""What the verdict says besides the differences: what it could not compare, and what to expect.

* Stages before the first cause that were not compared (or only by statistics): a difference
  there would come first, so the verdict must not be read as if they matched.
* Dropout active on both sides: its masks are random, so forward / loss differences after it are
  expected unless both sides draw the same random stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acclint.runtime_checks.model.fingerprint import Fingerprint
from acclint.runtime_checks.model.ranks import world_sizes
from acclint.runtime_checks.model.stages import TITLES, UPSTREAM

if TYPE_CHECKING:
    from acclint.runtime_checks.compare.compare import ComparisonResult, StageOutcome

# Stages whose differences dropout masks explain.
AFTER_DROPOUT = ("forward", "loss", "grads", "update")


def first_cause_stage(result: "ComparisonResult") -> "StageOutcome | None":
    """The stage holding the first cause (the seed, when it differs, before every other)."""
    causes = result.causes
    if not causes:
        return None
    return next(o for o in result.stages if causes[0] in o.mismatches)


def verdict_notes(result: "ComparisonResult") -> list[str]:
    notes = []
    unchecked = not_compared_before(result)
    if unchecked:
        notes.append(f"{', '.join(TITLES[o.stage] for o in unchecked)} "
                     f"{'was' if len(unchecked) == 1 else 'were'} not fully compared ({_reasons(unchecked)}): "
                     "a difference there would come before the one named first")
    dropout = _dropout_note(result)
    if dropout:
        notes.append(dropout)
    if result.left.world_size != result.right.world_size:
        # Not a difference by itself (a TP=8 run and a single device compare), but the data-parallel
        # split changes each rank's batch and the gradient averaging: say it where differences are read.
        notes.append(f"the world size differs ({world_sizes(result.left, result.right)}): differences in the data, "
                     "the loss and the gradients may follow from the data-parallel split (each rank's share of the "
                     "batch, the sampler, the gradient averaging) rather than from the stage named first")
    return notes


def not_compared_before(result: "ComparisonResult") -> list["StageOutcome"]:
    """The stages feeding the first cause's stage that were skipped or compared by statistics only."""
    first = first_cause_stage(result)
    if first is None:
        return []
    feeding = set(UPSTREAM.get(first.stage, ()))
    return [o for o in result.stages if o.stage in feeding and not o.compared_fully]


def _reasons(outcomes: list["StageOutcome"]) -> str:
    reasons = dict.fromkeys((o.skipped or o.partial or "").removeprefix("not compared: ") for o in outcomes)
    return "; ".join(reason for reason in reasons if reason)


def _dropout_note(result: "ComparisonResult") -> str | None:
    differs_after = any(o.mismatches for o in result.stages if o.stage in AFTER_DROPOUT)
    if not differs_after or not (result.left.training and result.right.training):
        return None
    left, right = active_dropout(result.left), active_dropout(result.right)
    if not left or not right:
        return None
    return (f"dropout is active on both sides ({_listed(left)} on the left, {_listed(right)} on the right): its masks "
            "are random, so forward and loss differences after it are expected unless both sides draw the same "
            "random stream (same framework, seed and RNG state); compare with dropout off (p=0) to check the rest")


def active_dropout(fingerprint: Fingerprint) -> dict[str, float]:
    """Native module name -> drop probability, for the dropout modules with p > 0."""
    found = {}
    for module in fingerprint.modules or ():
        p = module.settings.get("p")
        if "Dropout" in module.module and isinstance(p, (int, float)) and p > 0:
            found[module.name or "<model>"] = float(p)
    return found


def _listed(dropout: dict[str, float]) -> str:
    shown = [f"{name} p={p:g}" for name, p in list(dropout.items())[:3]]
    return ", ".join(shown) + (f" and {len(dropout) - 3} more" if len(dropout) > 3 else "")
