"""The stages that feed the forward pass and the forward pass itself: data, module settings, activations.

* data: every batch tensor by its path, compared by value (hash of int64 / float32 values), so
  torch int64 labels and MindSpore int32 labels with equal values are equal; a per-sample hash
  says which sample differs.
* settings: module settings (norm eps, BatchNorm momentum, dropout p, GELU approximation, ...)
  of modules matched by their common name, at float32 resolution.
* forward: module calls matched by (common module name, call number, input/output) and walked in
  the order the left side ran them. The first module output that differs beyond tolerance is the
  `activation` cause; every later one follows from it. Leaf inputs locate the difference: inputs
  that already differ while the previous module's output matched put it in the model's own
  forward code between those two modules.

Activations across frameworks differ by float32 noise (another summation order in a matmul),
so they are compared on their statistics: |a - b| <= atol + activation_rtol * scale, where the
scale is the larger norm (for the norm), the larger std (for the std) and the larger RMS (for
mean, min, max and the values kept at evenly spaced positions, compared one by one). Equal
hashes are equal without further ado.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from acclint.runtime_checks.model.fingerprint import ActivationRecord, ModuleRecord, ValueRecord
from acclint.runtime_checks.model.mismatch import Mismatch
from acclint.runtime_checks.model.module_settings import mindspore_note
from acclint.runtime_checks.model.names import NameMapping
from acclint.runtime_checks.model.optimizers import values_equal

# Float32 noise between two correct ports stays far below this (1e-6 relative on the tests' networks);
# a GELU approximation, a LeakyReLU for a ReLU or a missing attention scale are far above.
DEFAULT_ACTIVATION_RTOL = 1e-4

ROOT = "<model>"  # the model itself: its output is the model's output
EventKey = tuple[str, int, str]  # (common module name, call, "input" / "output")


def shown(name: str) -> str:
    return ROOT if name == "" else name


# ---------------------------------------------------------------------------- data
def check_data(outcome: Any, left: list[ValueRecord] | None, right: list[ValueRecord] | None,
               hashes_differ: str | None = None, rtol: float = 0.0, atol: float = 0.0) -> None:
    """`hashes_differ`: why the two sides' hashes cannot be compared (then the tensors are compared by
    their statistics within rtol / atol, and the stage says it was compared only in part)."""
    if left is None or right is None:
        outcome.skipped = f"not recorded on the {'left' if left is None else 'right'}"
        return
    lb, rb = {v.path: v for v in left}, {v.path: v for v in right}
    for path in [p for p in lb if p not in rb] + [p for p in rb if p not in lb]:
        side, record = ("left", lb[path]) if path in lb else ("right", rb[path])
        outcome.mismatches.append(Mismatch(
            "batch", _batch_name(path), record.shape if side == "left" else None, record.shape if side == "right" else None,
            f"batch tensor {_batch_name(path)} {record.shape} exists only on the {side}",
        ))
    same = [p for p in lb if p in rb]
    retyped = []
    for path in same:
        a, b = lb[path], rb[path]
        name = _batch_name(path)
        if a.shape != b.shape:
            outcome.mismatches.append(Mismatch(
                "batch", name, a.shape, b.shape, f"batch tensor {name} has shape {a.shape} on the left, {b.shape} on the right",
            ))
        elif hashes_differ is not None:
            if not stats_close(a.stats, b.stats, math.prod(a.shape), rtol, atol, COMPARABLE_ACROSS_FORMATS):
                outcome.mismatches.append(Mismatch(
                    "batch", name, _stats_view(a), _stats_view(b),
                    f"batch tensor {name} {a.shape} holds other values (by its statistics): {_stats_text(a, b)}",
                ))
        elif a.sha256 != b.sha256:
            outcome.mismatches.append(Mismatch(
                "batch", name, _stats_view(a), _stats_view(b),
                f"batch tensor {name} {a.shape} {_which_samples(a, b)}: {_stats_text(a, b)}"
                + (f" ({a.dtype} on the left, {b.dtype} on the right)" if a.dtype != b.dtype else ""),
            ))
        elif a.dtype != b.dtype:
            retyped.append(f"{name} {a.dtype} vs {b.dtype}")
    if hashes_differ is not None:
        outcome.partial = hashes_differ
        outcome.summary = f"statistics of {len(same)} tensor(s) agree" if not outcome.mismatches else ""
        return
    outcome.summary = f"{len(same)} tensor(s), equal by value" if not outcome.mismatches else ""
    if retyped and not outcome.mismatches:
        outcome.summary += f" ({', '.join(retyped)}: same values)"


def _batch_name(path: str) -> str:
    return path or "<batch>"


def _which_samples(a: ValueRecord, b: ValueRecord) -> str:
    """What differs, from the per-sample hashes: the same samples in another order, or which samples."""
    if not a.samples or not b.samples or len(a.samples) != len(b.samples):
        return "holds other values"
    differing = [i for i, (x, y) in enumerate(zip(a.samples, b.samples)) if x != y]
    listed = ", ".join(map(str, differing[:8])) + (", ..." if len(differing) > 8 else "")
    if sorted(a.samples) == sorted(b.samples):
        return (f"holds the same {len(a.samples)} samples in another order ({len(differing)} moved, index {listed}): "
                "the shuffling or the sampler differs (seed, shuffle flag, sampler order)")
    return f"holds other values in {len(differing)} of {len(a.samples)} samples (index {listed})"


# ---------------------------------------------------------------------------- settings
def index_modules(records: list[ModuleRecord] | None, rules: NameMapping) -> dict[str, ModuleRecord] | None:
    if records is None:
        return None
    index = {}
    for record in records:
        name = shown(rules.module_name(record.name))
        if not rules.ignored(name):
            index[name] = record
    return index


def check_settings(outcome: Any, left: dict[str, ModuleRecord] | None, right: dict[str, ModuleRecord] | None,
                   with_mindspore: bool = False) -> None:
    """`with_mindspore`: one side is MindSpore, so the notes on MindSpore's defaults apply."""
    if left is None or right is None:
        outcome.skipped = f"not recorded on the {'left' if left is None else 'right'}"
        return
    compared, before = 0, len(outcome.mismatches)
    for name in (n for n in left if n in right):
        a, b = left[name], right[name]
        for key in (k for k in a.settings if k in b.settings):
            compared += 1
            va, vb = a.settings[key], b.settings[key]
            if values_equal(va, vb):
                continue
            note = mindspore_note(key, (a.module, b.module)) if with_mindspore else ""
            outcome.mismatches.append(Mismatch(
                "module-config", f"{name}.{key}", va, vb,
                f"{name}.{key} is {_show(va)} on the left ({a.module}), {_show(vb)} on the right ({b.module})"
                + (f": {note}" if note else ""),
            ))
    modules = sum(1 for n in left if n in right)
    if not modules and (left or right):
        outcome.skipped = "not compared: no module with settings has the same name on both sides"
        return
    # Counts the equal ones only: a stage that differs must not read "1 setting(s) ... equal".
    differing = len(outcome.mismatches) - before
    counted = f"{compared - differing} of {compared}" if differing else str(compared)
    outcome.summary = (f"{counted} setting(s) of {modules} module(s) equal" if modules
                       else "no module with settings (norm eps, dropout, ...) on either side")


def _show(value: Any) -> str:
    return f"{value:.7g}" if isinstance(value, float) else repr(value) if isinstance(value, str) else str(value)


# ---------------------------------------------------------------------------- forward
def index_forward(records: list[ActivationRecord] | None, rules: NameMapping) -> list[tuple[EventKey, ActivationRecord]] | None:
    """(key, record) in the order the hooks fired; modules the mapping ignores are left out."""
    if records is None:
        return None
    names: dict[str, str] = {}
    events = []
    for record in records:
        if record.name not in names:
            names[record.name] = shown(rules.module_name(record.name))
        name = names[record.name]
        if not rules.ignored(name):
            events.append(((name, record.call, record.io), record))
    return events


class ForwardComparison:
    def __init__(self, left: list | None, right: list | None, rtol: float, atol: float) -> None:
        self.left, self.right = left, right
        self.views_differ: str | None = None  # why the two forwards saw different shares of the batch
        self.rtol, self.atol = rtol, atol
        # Position of each module's first output in the left run: what had run by when.
        self.position: dict[str, int] = {}
        for index, ((name, _call, io), _record) in enumerate(left or []):
            if io == "output":
                self.position.setdefault(name, index)

    def ran_by(self, module: str, diverging: str) -> bool:
        """Whether `module` had produced its output by the time `diverging` produced its own
        (a module inside a container finishes before it; one that never ran did not)."""
        here, there = self.position.get(module), self.position.get(diverging)
        return here is not None and there is not None and here <= there

    def check(self, outcome: Any) -> None:
        if self.left is None or self.right is None:
            outcome.skipped = f"not recorded on the {'left' if self.left is None else 'right'}"
            return
        if self.views_differ:
            outcome.skipped = self.views_differ
            return
        partners = dict(self.right)
        last_ok: str | None = None
        bad_input: tuple[str, str | None] | None = None  # (module, last module that matched before it)
        outputs = 0
        first: Mismatch | None = None
        for key, record in self.left:
            partner = partners.get(key)
            if partner is None:
                continue
            name, _call, io = key
            difference = self.difference(record, partner)
            if io == "input":
                if difference is not None and first is None and bad_input is None:
                    bad_input = (name, last_ok)
                continue
            outputs += 1
            if difference is None:
                if first is None:
                    last_ok, bad_input = name, None
                continue
            a, b = difference
            stats = f"output{' ' + a.path if a.path else ''}: {_stats_text(a, b)}"
            if first is None:
                first = Mismatch("activation", name, _stats_view(a), _stats_view(b),
                                 f"first diverging module: {name} ({record.module}), {stats}; "
                                 + _where(name, record, bad_input, last_ok))
                outcome.mismatches.append(first)
            else:
                outcome.mismatches.append(Mismatch("activation", name, _stats_view(a), _stats_view(b),
                                                   f"{name} ({record.module}) differs too: {stats}",
                                                   consequence_of="activation"))
        matched_names = {key[0] for key, _ in self.left if key in partners}
        if not outputs:  # nothing compared is never "ok"
            empty = [side for side, records in (("left", self.left), ("right", self.right)) if not records]
            outcome.skipped = ("not compared: no module call has the same name on both sides" if not empty else
                               f"not compared: no module output was recorded on the {' and the '.join(empty)} "
                               "(the forward ran outside the module hooks: a compiled graph, a forward under no_grad, "
                               "or a MindSpore graph-mode step)")
            return
        if first is None:
            outcome.summary = f"{outputs} module output(s) of {len(matched_names)} module(s) within tolerance"
        else:
            later = len(outcome.mismatches) - 1
            outcome.summary = (f"first diverging module {first.name}, last that matched: {last_ok or 'none'}"
                               + (f"; {later} later module output(s) differ as a consequence" if later else ""))
        self.last_matched = last_ok

    def difference(self, a: ActivationRecord, b: ActivationRecord) -> tuple[ValueRecord, ValueRecord] | None:
        """The first of the call's tensors (matched by path) that differs, or None."""
        right = {v.path: v for v in b.values}
        for value in a.values:
            other = right.get(value.path)
            if other is not None and not values_close(value, other, self.rtol, self.atol):
                return value, other
        return None


STAT_KEYS = ("norm", "std", "mean", "min", "max")
# Statistics every acclint version computes alike (older captures could lose the std's digits to
# cancellation, see `moments`): what tensors hashed with different algorithms are compared on.
COMPARABLE_ACROSS_FORMATS = ("norm", "mean", "min", "max")


def values_close(a: ValueRecord, b: ValueRecord, rtol: float, atol: float) -> bool:
    if a.shape != b.shape:
        return False
    if a.sha256 == b.sha256:
        return True
    if not stats_close(a.stats, b.stats, math.prod(a.shape), rtol, atol):
        return False
    rms = _rms(a.stats, b.stats, math.prod(a.shape))
    if a.sample and b.sample and len(a.sample) == len(b.sample):
        limit = atol + rtol * rms
        return all(abs(x - y) <= limit or x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a.sample, b.sample))
    return True


def stats_close(a: dict[str, float], b: dict[str, float], numel: int, rtol: float, atol: float,
                keys: tuple[str, ...] = STAT_KEYS) -> bool:
    """Whether two tensors' statistics agree: |a - b| <= atol + rtol * scale, the scale being the larger
    norm (for the norm), the larger std (for the std) and the larger RMS (for mean, min and max)."""
    rms = _rms(a, b, numel)
    scales = {"norm": max(abs(a.get("norm", 0.0)), abs(b.get("norm", 0.0))),
              "std": max(abs(a.get("std", 0.0)), abs(b.get("std", 0.0)))}
    for key in keys:
        x, y = a.get(key), b.get(key)
        if x is None or y is None:
            continue
        if not (math.isfinite(x) and math.isfinite(y)):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
            continue
        if abs(x - y) > atol + rtol * scales.get(key, rms):
            return False
    return True


def _rms(a: dict[str, float], b: dict[str, float], numel: int) -> float:
    return max(a.get("norm", 0.0), b.get("norm", 0.0)) / math.sqrt(max(1, numel))


def _where(name: str, record: ActivationRecord, bad_input: tuple[str, str | None] | None, last_ok: str | None) -> str:
    if bad_input is not None:
        module, before = bad_input
        if before is None:
            return (f"the inputs of {module}, the first module to run, already differ: "
                    "look at the data and at the model's forward before it")
        return (f"the inputs of {module} already differ while the output of {before} matched: the difference "
                f"lies in the model's own forward between {before} and {module}")
    if record.leaf:
        return f"its inputs match: the difference lies in {name} itself (its weights, operator, settings or precision)"
    after = f" after {last_ok}" if last_ok else ""
    return (f"every module inside it matched: the difference lies in the forward of {name} itself{after} "
            "(code between its submodules, or a functional call)")


def _stats_view(record: ValueRecord) -> dict[str, Any]:
    view: dict[str, Any] = {key: record.stats[key] for key in ("norm", "mean", "std", "min", "max") if key in record.stats}
    view["shape"] = record.shape
    view["sha256"] = record.sha256[:16]
    return view


def _stats_text(a: ValueRecord, b: ValueRecord) -> str:
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    parts = [f"{key} {a.stats[key]:.6g} vs {b.stats[key]:.6g}" for key in ("norm", "mean", "max") if key in a.stats and key in b.stats]
    return ", ".join(parts)


def stats_lines(mismatch: Mismatch) -> Iterable[str]:
    """Both sides' statistics of a value mismatch, for the text verdict."""
    for side, view in (("left ", mismatch.left), ("right", mismatch.right)):
        if isinstance(view, dict):
            numbers = ", ".join(f"{k} {v:.6g}" for k, v in view.items() if isinstance(v, float))
            yield f"{side}: {numbers}"
