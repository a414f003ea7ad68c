"""The verdict of a dump comparison, in the stages, JSON and text of `acclint compare`.

One reading per pair of ranks (rank 0 with rank 0, ...) is merged into the guides' stages. What a
dump does not record (module settings, training mode, environment; the optimizer and the update
at L0; the loss without a loss API) is said to be "not compared", never passed as parity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acclint.runtime_checks.compare.compare import REPORT_VERSION, StageOutcome
from acclint.runtime_checks.compare.notes import not_compared_before
from acclint.runtime_checks.dumps import values
from acclint.runtime_checks.dumps.causal import Reading
from acclint.runtime_checks.model.mismatch import Mismatch
from acclint.runtime_checks.model.stages import STAGES, TITLES, UPSTREAM, StagedVerdict

NOT_IN_DUMPS = "not compared: an msprobe dump does not record it"
# Why a stage a dump can hold was not recorded by these dumps.
UNRECORDED = {
    "data": "not compared: no forward call matched on both sides",
    "names": "not compared: no module parameters in the dumps (L0 and mix record them)",
    "count": "not compared: no module parameters in the dumps (L0 and mix record them)",
    "weights": "not compared: no module parameters in the dumps (L0 and mix record them)",
    "forward": "not compared: no forward call matched on both sides",
    "loss": "not compared: no loss API in the dumps (L1 and mix record it)",
    "grads": "not compared: no backward call in the dumps",
    "optimizer": "not compared: no API call after the backward pass (L1 and mix record the optimizer's arithmetic)",
    "update": "not compared: no API call after the backward pass (L1 and mix record the optimizer's arithmetic)",
}


@dataclass
class DumpSide:
    """One side as the verdict names it (a dump, or a fingerprint read as one)."""

    label: str
    framework: str
    training: bool = True


@dataclass
class DumpComparison(StagedVerdict):
    left: DumpSide
    right: DumpSide
    stages: list[StageOutcome]
    notes: list[str] = field(default_factory=list)

    @property
    def causes(self) -> list[Mismatch]:
        return [m for m in self.mismatches if m.is_cause]

    @property
    def tolerances(self) -> str:
        return values.tolerance_text()

    def kinds(self) -> set[str]:
        return {m.kind for m in self.mismatches}

    def to_dict(self) -> dict[str, Any]:
        return {"version": REPORT_VERSION, "ok": self.ok, "mismatches": [m.to_dict() for m in self.mismatches],
                "left": self.left.label, "right": self.right.label, "tolerances": self.tolerances,
                "not_compared": {o.stage: o.skipped for o in self.stages if o.skipped}, "notes": self.notes}

    def verdict(self) -> str:
        from acclint.runtime_checks.compare.verdict import render_text

        return render_text(self)

    def __str__(self) -> str:
        return self.verdict()


def build(left: DumpSide, right: DumpSide, readings: dict[str, Reading], pairing_note: str = "") -> DumpComparison:
    """`readings`: rank pair label ("rank0" or "rank0 / rank0") -> what that pair shows."""
    several = len(readings) > 1
    outcomes: dict[str, StageOutcome] = {}
    for stage, _title in STAGES:
        outcome = StageOutcome(stage)
        recorded = [r for r in readings.values() if stage in r.recorded]
        for pair, reading in readings.items():
            for mismatch in reading.mismatches.get(stage, []):
                if several:
                    mismatch.name = f"{pair}: {mismatch.name}"
                    mismatch.message = f"[{pair}] {mismatch.message}"
                outcome.mismatches.append(mismatch)
        if not recorded:
            outcome.skipped = UNRECORDED.get(stage, NOT_IN_DUMPS)
        else:
            summary = next((r.summaries[stage] for r in recorded if stage in r.summaries), "")
            outcome.summary = summary + (f" (on each of {len(readings)} rank pairs)" if several and summary else "")
        for mismatch in outcome.mismatches:
            mismatch.stage = stage
            if mismatch.consequence_of is None:
                mismatch.consequence_of = _upstream_cause(stage, outcomes)
        outcomes[stage] = outcome
    result = DumpComparison(left, right, list(outcomes.values()))
    unchecked = not_compared_before(result)
    if unchecked:
        listed = ", ".join(TITLES[o.stage] for o in unchecked)
        result.notes.append(f"{listed} {'was' if len(unchecked) == 1 else 'were'} not compared (the dumps do not "
                            "record it): a difference there would come before the one named first")
    for reading in readings.values():
        result.notes.extend(note for note in reading.static_notes if note not in result.notes)
    if pairing_note:
        result.notes.append(pairing_note)
    result.notes.append("the guides' pre-check standard (cosine > 0.99 and max abs error < 1e-4) needs whole tensors, "
                        "which a statistics dump does not hold: the statistics are held to the rtol named above, "
                        "per dtype (knowledge/msprobe_dumps.toml)")
    return result


def _upstream_cause(stage: str, outcomes: dict[str, StageOutcome]) -> str | None:
    for upstream in UPSTREAM.get(stage, ()):
        causes = [m for m in outcomes[upstream].mismatches if m.is_cause]
        if causes:
            return causes[0].kind
    return None
