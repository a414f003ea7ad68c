"""Row source: a composed softmax or norm that upcasts its input to fp32 first on one side and
computes in the input dtype on the other, in the matching class/function (knowledge/model_values.toml
`[casts]`; the upcast is recognised while the forms are found, setups.model.forms)."""

from __future__ import annotations

from acclint.setups.diff import Mismatch
from acclint.setups.model.forms import casts, operations
from acclint.setups.model.read import ModelSide, Occurrence
from acclint.setups.model.sources import Rows, register
from acclint.setups.model.values import differing, scope_note
from acclint.setups.record import Setting

SUFFIX = "-upcast"


@register
def upcasts(left: ModelSide, right: ModelSide) -> Rows:
    rows = Rows()
    table = casts()
    for operation in table["operations"]:
        on_left = _composed(left, operation)
        on_right = _composed(right, operation)
        if not on_left or not on_right:
            continue
        pair = differing(on_left, on_right, lambda a, b: a.upcast == b.upcast)
        if pair is None:
            rows.same.append(operation + SUFFIX)
        else:
            rows.mismatches.append(_mismatch(operation, table, *pair))
    return rows


def _composed(side: ModelSide, operation: str) -> list:
    return [o for o in side.occurrences if o.form.operation == operation and o.upcast is not None]


def _mismatch(operation: str, table: dict, left: Occurrence, right: Occurrence) -> Mismatch:
    key = operation + SUFFIX
    settings = [_setting(key, o) for o in (left, right)]
    consequence = f"{table['consequence']} ({table['source']})"
    upcast_side = "left" if left.upcast else "right"
    sides = ", ".join(f"{side} {s.value} ({s.where}{'; ' + s.note if s.note else ''})"
                      for side, s in (("left", settings[0]), ("right", settings[1])))
    message = (f"{key} ({operations()[operation]['what']}: input upcast to fp32 first) only on the {upcast_side}: "
               f"{sides}. Numerics: {consequence}. While aligning accuracy, upcast on both sides (or on neither).")
    return Mismatch(key, table["category"], *settings, message, consequence=consequence)


def _setting(key: str, occurrence: Occurrence) -> Setting:
    value = f"{occurrence.form.label}, " + ("upcast to fp32" if occurrence.upcast else "in the input dtype")
    return Setting(key, value, occurrence.where, written=value, note=scope_note(occurrence))
