"""compare(): every difference between two fingerprints, stage by stage in the guides' order.

Every stage is measured, even after an earlier one differs: a user whose initial weights differ
still sees how far apart the losses are. A difference in a stage that an earlier differing stage
feeds (different weights make every loss differ) carries `consequence_of` (that stage's kind),
so the first mismatch without it is the one to fix first.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from acclint.runtime_checks.distributed.logical import FORWARD_VIEW, RANK_ZERO_VIEW
from acclint.runtime_checks.model.errors import FingerprintError, NonFiniteLossError
from acclint.runtime_checks.model.ranks import world_sizes
from acclint.runtime_checks.model.fingerprint import FORMAT_VERSION, Fingerprint, OptimizerGroup, TensorRecord
from acclint.runtime_checks.distributed.rank_files import load
from acclint.runtime_checks.compare.batch_split import same_samples_split_differently
from acclint.runtime_checks.compare.rank_steps import compare_ranks, first_divergence
from acclint.runtime_checks.compare.forward_compare import (
    DEFAULT_ACTIVATION_RTOL,
    ForwardComparison,
    COMPARABLE_ACROSS_FORMATS,
    check_data,
    check_settings,
    index_forward,
    index_modules,
    stats_close,
)
from acclint.runtime_checks.model.mismatch import Mismatch
from acclint.runtime_checks.model.names import (
    NameMapping,
    close_matches,
    load_mapping,
    whole_model_prefix,
    without_wrappers,
)
from acclint.runtime_checks.model.optimizers import STANDS_FOR, hparam, merge_equal_groups, values_equal
from acclint.runtime_checks.model.stages import ADDED_IN_FORMAT, SEED_FEEDS, STAGES, TITLES, UPSTREAM, StagedVerdict

# Losses and norms: float32 noise between two correct runs is ~1e-7 relative; real divergence is far above.
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-6
# Update norms after one step of an adaptive optimizer are noisier: Adam's first step divides each
# gradient by its own magnitude (amplifying float32 noise), and MindSpore's Adam applies eps after
# bias correction, which alone moves step-1 updates by ~1e-4 relative. Real optimizer differences
# (bias correction, lr scaling, unscaled loss scale, decoupled vs L2 decay) are far larger.
DEFAULT_UPDATE_RTOL = 1e-3

# The shape of `compare --format json` (the contract), independent of the fingerprint file format.
REPORT_VERSION = 1

# Why two normalised optimizer types differ, when it is a known migration trap: (note, whether it
# is about MindSpore, and so said only when one side is MindSpore).
OPTIMIZER_TYPE_NOTES = {
    frozenset({"adamw", "adamw-no-bias-correction"}): (
        "MindSpore nn.AdamWeightDecay applies no bias correction (and defaults to eps 1e-6, weight decay 0.0); "
        "torch AdamW does; mindspore.experimental.optim.AdamW matches torch AdamW", True,
    ),
    frozenset({"adam", "adamw"}): (
        "Adam adds weight decay to the gradient (L2); AdamW decays the weights directly", False,
    ),
    frozenset({"rmsprop", "rmsprop-eps-in-sqrt"}): (
        "MindSpore RMSProp adds eps inside the square root, torch outside", True,
    ),
}

# Optimizer settings outside the groups that name a class of one framework (compared within one only).
SCHEDULER_NAMES = frozenset({"lr-schedule"})

# Below this share of parameter names found on both sides (of the larger side's count),
# the fingerprints are of different models: listing every missing name would bury that.
SAME_MODEL_SHARE = 0.5

TRAIN_MODE_HINTS = {
    "mindspore": "MindSpore cells start in inference mode: call net.set_train() before training",
    "torch": "model.eval() is in force: call model.train() before training",
}


@dataclass
class StageOutcome:
    stage: str
    mismatches: list[Mismatch] = field(default_factory=list)
    summary: str = ""
    skipped: str | None = None
    partial: str | None = None  # compared only in part (by statistics, not values): why

    @property
    def compared_fully(self) -> bool:
        return not self.skipped and not self.partial

    @property
    def title(self) -> str:
        return TITLES[self.stage]

    @property
    def failed(self) -> bool:
        return bool(self.mismatches)


@dataclass
class ComparisonResult(StagedVerdict):
    left: Fingerprint
    right: Fingerprint
    stages: list[StageOutcome]
    rtol: float
    atol: float
    update_rtol: float = DEFAULT_UPDATE_RTOL
    activation_rtol: float = DEFAULT_ACTIVATION_RTOL
    notes: list[str] = field(default_factory=list)  # said under the verdict (see `notes`)

    @property
    def causes(self) -> list[Mismatch]:
        """The mismatches that follow from no earlier one: what to fix, first one first (a seed
        difference first of all: the data and the initial weights follow from it)."""
        causes = [m for m in self.mismatches if m.is_cause]
        return sorted(causes, key=lambda m: not is_seed(m))

    def cause_kinds(self) -> set[str]:
        return {m.kind for m in self.causes}

    @property
    def skipped(self) -> dict[str, str]:
        return {o.stage: o.skipped for o in self.stages if o.skipped}

    def kinds(self) -> set[str]:
        return {m.kind for m in self.mismatches}

    def to_dict(self) -> dict[str, Any]:
        from acclint.runtime_checks.model.fingerprint import _encode_non_finite

        return _encode_non_finite(
            {"version": REPORT_VERSION, "ok": self.ok, "mismatches": [m.to_dict() for m in self.mismatches]}
        )

    @property
    def tolerances(self) -> str:
        """The tolerances the verdict names (a dump comparison states its own)."""
        return (f"rtol {self.rtol:g}, atol {self.atol:g}, update rtol {self.update_rtol:g}, "
                f"activation rtol {self.activation_rtol:g}")

    def verdict(self) -> str:
        from acclint.runtime_checks.compare.verdict import render_text

        return render_text(self)

    def __str__(self) -> str:
        return self.verdict()


def compare(
    left: "Fingerprint | str | Path",
    right: "Fingerprint | str | Path",
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    update_rtol: float = DEFAULT_UPDATE_RTOL,
    activation_rtol: float = DEFAULT_ACTIVATION_RTOL,
    mapping: "NameMapping | Mapping[str, Any] | str | Path | None" = None,
) -> ComparisonResult:
    """Compare two fingerprints (objects or file paths). FingerprintError when they cannot be compared.

    Losses and gradient norms match when |a - b| <= atol + rtol * max(|a|, |b|); update norms use
    update_rtol instead of rtol; module activations use activation_rtol (see forward_compare).
    Hyperparameters and module settings always use float32 resolution (1e-6 relative).
    Fingerprints of format versions 1 and 2 compare with each other; stages a version 1 file
    does not have are shown as not recorded. Tensor hashes of versions 1-2 (sha256) and 3 (mix64)
    cannot be compared: those stages are skipped, saying so.
    """
    left, right = (side if isinstance(side, Fingerprint) else load(side) for side in (left, right))
    tolerances = {"rtol": rtol, "atol": atol, "update_rtol": update_rtol, "activation_rtol": activation_rtol}
    if not all(value >= 0 for value in tolerances.values()):
        shown = ", ".join(f"{key}={value}" for key, value in tolerances.items())
        raise FingerprintError(f"tolerances must be non-negative numbers, got {shown}")
    for label, fingerprint in (("left", left), ("right", right)):
        _require_finite_losses(label, fingerprint)
    rules = load_mapping(mapping)
    comparer = _Comparer(_Side(left, "left", rules), _Side(right, "right", rules), rtol, atol, update_rtol,
                         activation_rtol)
    result = ComparisonResult(left, right, comparer.run(), rtol, atol, update_rtol, activation_rtol)
    from acclint.runtime_checks.compare.notes import verdict_notes

    result.notes = verdict_notes(result)
    return result


def is_seed(mismatch: Mismatch) -> bool:
    return mismatch.kind == "env" and mismatch.name == "seed"


def assert_parity(
    left: "Fingerprint | str | Path", right: "Fingerprint | str | Path", **options: Any
) -> ComparisonResult:
    """For pytest: AssertionError carrying the verdict when the fingerprints differ."""
    result = compare(left, right, **options)
    if not result.ok:
        raise AssertionError(result.verdict())
    return result


def _require_finite_losses(label: str, fingerprint: Fingerprint) -> None:
    step = fingerprint.step
    if step is None:
        return
    for what, value in (("step-0 loss", step.loss), ("loss after one update", step.loss_after_step)):
        if value is not None and not math.isfinite(value):
            kind = "NaN" if math.isnan(value) else "infinite"
            where = fingerprint.path or label
            raise NonFiniteLossError(
                f"the {label} fingerprint ({where}) records a {kind} {what}: that run is broken, "
                "not a tolerance away from the other; fix it before comparing"
            )


class _Side:
    """One fingerprint with the user mapping applied to every name."""

    def __init__(self, fingerprint: Fingerprint, label: str, rules: NameMapping) -> None:
        self.fp = fingerprint
        self.label = label
        prefix = whole_model_prefix(without_wrappers(p.name) for p in fingerprint.params)
        if prefix is not None and prefix not in rules.prefixes:  # recorded through a DDP-style wrapper
            rules = dataclasses.replace(rules, prefixes={**rules.prefixes, prefix: ""})
        self.rename: dict[str, str] = {}
        self.params = self._index(fingerprint.params, rules)
        self.state = self._index(fingerprint.state, rules)
        step = fingerprint.step
        self.grad_norms = self._renamed(step.grad_norms) if step else {}
        self.update_norms = self._renamed(step.update_norms) if step else {}
        self.groups: list[OptimizerGroup] = []
        if fingerprint.optimizer is not None:
            renamed = [
                OptimizerGroup(g.hparams, [self.rename[n] for n in g.params if n in self.rename])
                for g in fingerprint.optimizer.groups
            ]
            self.groups = merge_equal_groups(renamed)
        self.modules = index_modules(fingerprint.modules, rules)
        self.forward = index_forward(fingerprint.forward, rules)

    def _index(self, records: list[TensorRecord], rules: NameMapping) -> dict[str, TensorRecord]:
        index = rules.index(records, f"the {self.label} fingerprint")
        self.rename.update({record.name: name for name, record in index.items()})
        return index

    def _renamed(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {self.rename[name]: value for name, value in values.items() if name in self.rename}

    def count(self) -> tuple[int, int]:
        total = sum(r.numel for r in self.params.values())
        return total, sum(r.numel for r in self.params.values() if r.trainable)

    def group_of(self, name: str) -> OptimizerGroup | None:
        return next((g for g in self.groups if name in g.params), None)


class _Comparer:
    def __init__(
        self, left: _Side, right: _Side, rtol: float, atol: float, update_rtol: float, activation_rtol: float
    ) -> None:
        self.left, self.right = left, right
        self.rtol, self.atol, self.update_rtol = rtol, atol, update_rtol
        self.common = [n for n in left.params if n in right.params]
        self.common_state = [n for n in left.state if n in right.state]
        self.forward = ForwardComparison(left.forward, right.forward, activation_rtol, atol)
        self.split = self._split()
        self.forward.views_differ = _forward_views_differ(left.fp, right.fp) or (
            f"not compared: the same samples are split differently ({self.split}), so each module's outputs "
            "are of other micro-batches; data, loss and gradients cover the whole step" if self.split else None)
        self.with_mindspore = "mindspore" in (left.fp.framework, right.fp.framework)
        self.seed = self._seed_difference()
        self.different_models = self._different_models()

    def run(self) -> list[StageOutcome]:
        checks: dict[str, Callable[[StageOutcome], None]] = {
            "data": self.check_data,
            "count": self.check_count,
            "names": self.check_names,
            "frozen": self.check_frozen,
            "optimizer": self.check_optimizer,
            "weights": self.check_weights,
            "mode": self.check_mode,
            "settings": lambda outcome: check_settings(outcome, self.left.modules, self.right.modules,
                                                       self.with_mindspore),
            "forward": self.forward.check,
            "loss": self.check_loss,
            "grads": self.check_grads,
            "update": self.check_update,
            "steps": self.check_steps,
            "env": self.check_env,
        }
        outcomes: dict[str, StageOutcome] = {}
        for stage, _title in STAGES:
            outcome = StageOutcome(stage)
            checks[stage](outcome)
            self._say_what_the_format_lacks(stage, outcome)
            outcomes[stage] = outcome
        self._split_alone(outcomes)
        for stage, outcome in outcomes.items():  # in stage order: a cause is known before what follows it
            for mismatch in outcome.mismatches:
                mismatch.stage = stage
                if mismatch.consequence_of is None:
                    mismatch.consequence_of = self._upstream_cause(stage, mismatch, outcomes)
                if mismatch.consequence_of is None and self.seed is not None and stage in SEED_FEEDS:
                    mismatch.consequence_of = "env"
        return list(outcomes.values())

    def _split_alone(self, outcomes: dict[str, StageOutcome]) -> None:
        """The same samples split differently, with the step-0 loss and gradients equal (each micro-batch's
        loss scaled by its share, no BatchNorm): the step is the same, and the split is said in the data
        stage, not held against the run. Loss or gradients that differ keep it as the cause they follow from."""
        data = outcomes["data"]
        if not self.split or [m.name for m in data.mismatches] != ["<split>"]:
            return
        if any(outcomes[stage].mismatches or not outcomes[stage].compared_fully for stage in ("loss", "grads")):
            return
        data.mismatches = []
        data.summary = (f"the same samples, split differently: {self.split} (step-0 loss and gradients equal, so "
                        "the split changes nothing in the step)")

    def _say_what_the_format_lacks(self, stage: str, outcome: StageOutcome) -> None:
        """A stage an older fingerprint format did not record says so, and how to get it."""
        added = ADDED_IN_FORMAT.get(stage)
        if not outcome.skipped or added is None:
            return
        for side in (self.left, self.right):
            if side.fp.version < added:
                outcome.skipped += (f" (the {side.label} fingerprint is format {side.fp.version}, which has no "
                                    f"{TITLES[stage]}: capture it again with this acclint, format {FORMAT_VERSION})")

    def _upstream_cause(self, stage: str, mismatch: Mismatch, outcomes: dict[str, StageOutcome]) -> str | None:
        """The kind of the first cause in a stage that feeds `stage`, if any."""
        if stage == "grads" and self._clipping_explains_gradients(outcomes["optimizer"]):
            return "optimizer-hparam"
        for upstream in UPSTREAM.get(stage, ()):
            causes = [m for m in outcomes[upstream].mismatches if m.is_cause]
            if upstream == "settings" and stage == "forward":
                # A setting explains a diverging module only if its module had run by then.
                causes = [m for m in causes if self.forward.ran_by(m.name.rpartition(".")[0], mismatch.name)]
            if causes:
                return causes[0].kind
        return None

    def _clipping_explains_gradients(self, optimizer: StageOutcome) -> bool:
        """A Probe reads the gradients after the user's step, so after clipping: a different
        clip-grad changes them (capture records them before clipping)."""
        clip_differs = any(m.is_cause and m.name == "clip-grad" for m in optimizer.mismatches)
        return clip_differs and "probe" in (self.left.fp.source, self.right.fp.source)

    def _seed_difference(self) -> Mismatch | None:
        # Seeds name the same random stream only within one framework.
        if self.left.fp.framework != self.right.fp.framework:
            return None
        a, b = self.left.fp.env.get("seed"), self.right.fp.env.get("seed")
        if a is None or b is None or a == b:
            return None
        return Mismatch("env", "seed", a, b, f"seed {a} on the left, {b} on the right: the initial weights, the "
                        "data order and the dropout masks follow from it")

    def _different_models(self) -> Mismatch | None:
        """One mismatch saying the fingerprints are of two different models, when few parameter
        names are found on both sides."""
        left, right = self.left.params, self.right.params
        if not left or not right:
            return None
        # By name only: the same names with other shapes are one network at another width.
        shared = len(self.common)
        if shared >= SAME_MODEL_SHARE * max(len(left), len(right)):
            return None
        models = (f"{self.left.fp.model} and {self.right.fp.model}" if self.left.fp.model != self.right.fp.model
                  else f"two {self.left.fp.model}s")
        return Mismatch(
            "param-missing", "<model>", len(left), len(right),
            f"these are different models ({models}): only {shared} of the left's {len(left)} and the right's "
            f"{len(right)} parameters have the same name; compare fingerprints of the same network "
            "(or add a mapping file if only the names differ)",
        )

    def check_data(self, outcome: StageOutcome) -> None:
        left, right = self.left.fp, self.right.fp
        check_data(outcome, left.batch, right.batch, self.hashes_differ(), self.rtol, self.atol)
        if not outcome.mismatches or self.hashes_differ() or left.batch is None or right.batch is None:
            return
        split = self.split
        if split is not None:  # the same samples: not "different data", but a split of its own
            outcome.mismatches = [Mismatch(
                "batch", "<split>", None, None,
                f"the same samples reach the optimizer step, split differently: {split} (equal losses and gradients "
                "follow when each micro-batch's loss is scaled by its share; BatchNorm statistics do not)",
            )]
            outcome.summary = f"the same samples, split differently: {split}"

    def _split(self) -> str | None:
        """How the two sides split the same samples of the first step, when they do."""
        left, right = self.left.fp, self.right.fp
        if self.hashes_differ() or left.batch is None or right.batch is None:
            return None
        return same_samples_split_differently(left.batch, right.batch, left.world_size, right.world_size)

    # ------------------------------------------------------------------ helpers
    def hashes_differ(self) -> str | None:
        """Why the two sides' tensor hashes cannot be compared (None: they can)."""
        a, b = self.left.fp, self.right.fp
        if a.hash_algorithm == b.hash_algorithm:
            return None
        return (f"values not compared: hashed with {a.hash_algorithm} on the left (fingerprint format {a.version}) "
                f"and {b.hash_algorithm} on the right (format {b.version}); capture both sides with the same "
                "acclint version to compare them")

    def no_common_parameters(self, outcome: StageOutcome, names: list[str]) -> bool:
        """True (and the stage skipped, saying why) when no parameter is there to compare."""
        if names:
            return False
        outcome.skipped = ("not compared: no parameter has the same name on both sides"
                           if not self.common else "not compared: no parameter recorded on both sides")
        return True

    def close(self, a: float, b: float, rtol: float | None = None) -> bool:
        return abs(a - b) <= self.atol + (self.rtol if rtol is None else rtol) * max(abs(a), abs(b))

    def numbers(
        self, kind: str, name: str, a: float | None, b: float | None, what: str, rtol: float | None = None
    ) -> Mismatch | None:
        """A mismatch when two recorded numbers differ beyond tolerance (non-finite: its own message)."""
        a = 0.0 if a is None else a
        b = 0.0 if b is None else b
        bad = [f"{side} {what} is {_nonfinite(v)}" for side, v in (("left", a), ("right", b)) if not math.isfinite(v)]
        if bad:
            if len(bad) == 2 and _nonfinite(a) == _nonfinite(b):
                bad = [f"{what} is {_nonfinite(a)} on both sides"]
            return Mismatch(kind, name, a, b, "; ".join(bad) + " (not a tolerance question)")
        if self.close(a, b, rtol):
            return None
        rel = abs(a - b) / max(abs(a), abs(b))
        return Mismatch(kind, name, a, b, f"{what} {a:.8g} vs {b:.8g} (relative difference {rel:.2e})")

    # ------------------------------------------------------------------ 1. parameter count
    def check_count(self, outcome: StageOutcome) -> None:
        (lt, ltr), (rt, rtr) = self.left.count(), self.right.count()
        outcome.summary = f"{lt:,} parameters, {ltr:,} trainable"
        if lt != rt:
            outcome.mismatches.append(Mismatch(
                "param-count", "all", lt, rt,
                f"{lt:,} parameters on the left, {rt:,} on the right ({ltr:,} vs {rtr:,} trainable)",
                consequence_of=None if self.different_models is None else "param-missing",
            ))
            return
        # A trainable-count difference that matched parameters' frozen flags explain is reported under "frozen".
        explained = sum(
            self.left.params[n].numel * (int(self.left.params[n].trainable) - int(self.right.params[n].trainable))
            for n in self.common
        )
        if ltr - rtr != explained:
            outcome.mismatches.append(Mismatch(
                "param-count", "trainable", ltr, rtr, f"{ltr:,} trainable parameters on the left, {rtr:,} on the right",
            ))
        elif ltr != rtr:
            outcome.summary = f"{lt:,} parameters ({ltr:,} vs {rtr:,} trainable: see frozen parameters)"

    # ------------------------------------------------------------------ 2. names and shapes
    def check_names(self, outcome: StageOutcome) -> None:
        if self.different_models is not None:
            outcome.mismatches.append(self.different_models)
        for what, left, right in (("parameter", self.left.params, self.right.params),
                                  ("state tensor", self.left.state, self.right.state)):
            only_left = [n for n in left if n not in right]
            only_right = [n for n in right if n not in left]
            for names, here, there, side, other in ((only_left, left, right, "left", only_right),
                                                     (only_right, right, left, "right", only_left)):
                for name in names:
                    record = here[name]
                    near = close_matches(name, other)
                    hint = f"; the other side has {' or '.join(near)} (add a mapping?)" if near else ""
                    shape = list(record.shape)
                    outcome.mismatches.append(Mismatch(
                        "param-missing", name,
                        shape if side == "left" else None, shape if side == "right" else None,
                        f"{what} {record.native_name} {shape} exists only on the {side}{hint}",
                    ))
            for name in (n for n in left if n in right):
                a, b = left[name], right[name]
                if a.shape != b.shape:
                    outcome.mismatches.append(Mismatch(
                        "param-shape", name, a.shape, b.shape, f"{what} {name}: shape {a.shape} on the left, {b.shape} on the right",
                    ))
                elif a.dtype != b.dtype:
                    outcome.mismatches.append(Mismatch(
                        "param-shape", name, a.dtype, b.dtype, f"{what} {name}: dtype {a.dtype} on the left, {b.dtype} on the right",
                    ))
        if self.different_models is not None:  # the listed names follow from it
            for mismatch in outcome.mismatches[1:]:
                mismatch.consequence_of = "param-missing"
        if not self.common and self.left.params and self.right.params:
            outcome.summary = "no parameter names in common: is a mapping file needed?"
        else:
            outcome.summary = f"{len(self.common)} parameters and {len(self.common_state)} state tensors matched by name"

    # ------------------------------------------------------------------ 3. frozen
    def check_frozen(self, outcome: StageOutcome) -> None:
        if self.no_common_parameters(outcome, self.common):
            return
        for name in self.common:
            a, b = self.left.params[name].trainable, self.right.params[name].trainable
            if a != b:
                outcome.mismatches.append(Mismatch(
                    "frozen", name, not a, not b,
                    f"{name} is {'trainable' if a else 'frozen'} on the left, {'trainable' if b else 'frozen'} on the right",
                ))
        frozen = sum(1 for n in self.common if not self.left.params[n].trainable)
        outcome.summary = f"{frozen} frozen" if frozen else "none frozen"

    # ------------------------------------------------------------------ 4. optimizer
    def check_optimizer(self, outcome: StageOutcome) -> None:
        lo, ro = self.left.fp.optimizer, self.right.fp.optimizer
        if lo is None or ro is None:
            outcome.skipped = f"not compared: no optimizer recorded on the {'left' if lo is None else 'right'}"
            return
        same_type = lo.type == ro.type
        if not same_type:
            note, about_mindspore = OPTIMIZER_TYPE_NOTES.get(frozenset({lo.type, ro.type}), (None, False))
            if about_mindspore and not self.with_mindspore:
                note = None
            outcome.mismatches.append(Mismatch(
                "optimizer-type", "type", lo.type, ro.type,
                f"{lo.native_type} ({lo.type}) on the left, {ro.native_type} ({ro.type}) on the right"
                + (f": {note}" if note else ""),
            ))
        shared = [n for n in self.common if self.left.params[n].trainable and self.right.params[n].trainable]
        if self._check_groups(outcome, shared):
            self._check_hparams(outcome, shared, same_type)
        self._check_extra(outcome, lo.extra, ro.extra)
        if not outcome.mismatches:
            raw, distinct = len(lo.groups), len(self.left.groups)
            outcome.summary = f"{lo.type}, {raw} group(s)" + (
                f" ({distinct} with distinct settings)" if distinct != raw else "")

    def _blocks(self, side: _Side, shared: list[str]) -> set[tuple[int, frozenset[str]]]:
        held = {n for g in side.groups for n in g.params}
        blocks = {(1, frozenset(n for n in g.params if n in shared)) for g in side.groups}
        blocks.add((0, frozenset(n for n in shared if n not in held)))  # trainable but not in the optimizer
        return {block for block in blocks if block[1]}

    def _check_groups(self, outcome: StageOutcome, shared: list[str]) -> bool:
        if self._blocks(self.left, shared) == self._blocks(self.right, shared):
            return True
        differing = []
        for name in shared:
            lg, rg = self.left.group_of(name), self.right.group_of(name)
            lh = "not in the optimizer" if lg is None else _diff_hparams(lg.hparams, rg.hparams if rg else {}, True)
            rh = "not in the optimizer" if rg is None else _diff_hparams(rg.hparams, lg.hparams if lg else {}, True)
            if lh != rh:
                differing.append(f"{name} ({lh} vs {rh})")
        shown = "; ".join(differing[:5]) + (f"; ... {len(differing) - 5} more" if len(differing) > 5 else "")
        outcome.mismatches.append(Mismatch(
            "optimizer-group", "groups", len(self.left.groups), len(self.right.groups),
            f"parameters are grouped differently ({len(self.left.groups)} group(s) with distinct settings on the left, "
            f"{len(self.right.groups)} on the right): {shown}",
        ))
        return False

    def _check_hparams(self, outcome: StageOutcome, shared: list[str], same_type: bool) -> None:
        pairs = []
        for group in self.left.groups:
            members = [n for n in group.params if n in shared]
            partner = self.right.group_of(members[0]) if members else None
            if partner is not None:
                pairs.append((group, partner, members))
        findings: dict[str, list[tuple[Any, Any, list[str]]]] = {}
        for lg, rg, members in pairs:
            keys = (set(lg.hparams) | set(rg.hparams)) if same_type else (set(lg.hparams) & set(rg.hparams))
            keys |= {k for k in STANDS_FOR if k in lg.hparams or k in rg.hparams}  # a peak hidden by a warmup
            for key in sorted(keys):
                a, b = hparam(lg.hparams, key), hparam(rg.hparams, key)
                if not values_equal(a, b):
                    findings.setdefault(key, []).append((a, b, members))
        for key, found in findings.items():
            uniform = len(found) == len(pairs) and all(values_equal(f[0], found[0][0]) and values_equal(f[1], found[0][1]) for f in found)
            if uniform:
                a, b, _ = found[0]
                scope = "" if len(pairs) == 1 else f" in all {len(pairs)} groups"
                outcome.mismatches.append(Mismatch(
                    "optimizer-hparam", key, a, b, f"{key} is {_show(a)} on the left, {_show(b)} on the right{scope}",
                ))
                continue
            for a, b, members in found:
                listed = ", ".join(members[:3]) + (", ..." if len(members) > 3 else "")
                outcome.mismatches.append(Mismatch(
                    "optimizer-hparam", key, a, b,
                    f"{key} is {_show(a)} on the left, {_show(b)} on the right for the group of {listed}",
                ))

    def _check_extra(self, outcome: StageOutcome, left: Mapping[str, Any], right: Mapping[str, Any]) -> None:
        for key in sorted(set(left) | set(right)):
            if key in SCHEDULER_NAMES and self.left.fp.framework != self.right.fp.framework:
                continue  # a class name of each framework's own: the peak and warmup say what it does
            a, b = left.get(key), right.get(key)
            if a is None or b is None or not values_equal(a, b):
                if a is None and b is None:
                    continue
                outcome.mismatches.append(Mismatch(
                    "optimizer-hparam", key, a, b,
                    f"{key} is {'off' if a is None else _show(a)} on the left, {'off' if b is None else _show(b)} on the right",
                ))

    # ------------------------------------------------------------------ 5. initial weights
    def check_weights(self, outcome: StageOutcome) -> None:
        hashes_differ = self.hashes_differ()
        left_tensors = right_tensors = None
        if hashes_differ is None:
            left_tensors = self.left.fp.load_tensors()
            right_tensors = self.right.fp.load_tensors()
        checked = 0
        for what, left, right, names in (("parameter", self.left.params, self.right.params, self.common),
                                         ("state", self.left.state, self.right.state, self.common_state)):
            for name in names:
                a, b = left[name], right[name]
                if a.shape != b.shape:
                    continue
                checked += 1
                if hashes_differ is not None:
                    if not stats_close(a.stats, b.stats, a.numel, self.rtol, self.atol, COMPARABLE_ACROSS_FORMATS):
                        outcome.mismatches.append(Mismatch(
                            "init-weights", name, _stats_view(a), _stats_view(b),
                            f"{what} {name} starts from different values (by its statistics): norm "
                            f"{a.stats['norm']:.6g} vs {b.stats['norm']:.6g}, mean {a.stats['mean']:.4g} vs "
                            f"{b.stats['mean']:.4g}",
                        ))
                    continue
                if a.sha256 == b.sha256:
                    continue
                detail = _max_abs_difference(left_tensors, right_tensors, a.name, b.name)
                outcome.mismatches.append(Mismatch(
                    "init-weights", name, _stats_view(a), _stats_view(b),
                    f"{what} {name} starts from different values: norm {a.stats['norm']:.6g} vs {b.stats['norm']:.6g}, "
                    f"mean {a.stats['mean']:.4g} vs {b.stats['mean']:.4g}{detail}",
                ))
        differing = len(outcome.mismatches)
        if not checked:
            self.no_common_parameters(outcome, [])
            return
        if hashes_differ is not None:
            outcome.partial = hashes_differ
            outcome.summary = (f"statistics of all {checked} tensors agree" if not differing
                               else f"{differing} of {checked} tensors differ")
            return
        outcome.summary = f"all {checked} tensors identical" if not differing else f"{differing} of {checked} tensors differ"

    # ------------------------------------------------------------------ 6. training mode
    def check_mode(self, outcome: StageOutcome) -> None:
        a, b = self.left.fp.training, self.right.fp.training
        outcome.summary = "train" if a else "inference"
        if a != b:
            side = self.left if not a else self.right
            hint = TRAIN_MODE_HINTS.get(side.fp.framework, "")
            outcome.mismatches.append(Mismatch(
                "train-mode", "training", a, b,
                f"the {side.label} model is in inference mode, the other in training mode"
                f" (dropout and BatchNorm behave differently){': ' + hint if hint else ''}",
            ))

    # ------------------------------------------------------------------ 7. step-0 loss
    def check_loss(self, outcome: StageOutcome) -> None:
        ls, rs = self.left.fp.step, self.right.fp.step
        if ls is None or rs is None:
            outcome.skipped = f"not compared: no step recorded on the {'left' if ls is None else 'right'}"
            return
        found = self.numbers("loss", "loss", ls.loss, rs.loss, "step-0 loss")
        if found:
            outcome.mismatches.append(found)
        outcome.summary = f"{ls.loss:.8g} vs {rs.loss:.8g}"

    # ------------------------------------------------------------------ 8. gradients
    def check_grads(self, outcome: StageOutcome) -> None:
        lg, rg = self.left.grad_norms, self.right.grad_norms
        if not lg or not rg:
            side = "left" if not lg else "right"
            outcome.skipped = f"not compared: no gradients recorded on the {side}"
            return
        names = [n for n in self.common if n in lg and n in rg]
        if self.no_common_parameters(outcome, names):
            return
        total_l = math.sqrt(sum((lg[n] or 0.0) ** 2 for n in names))
        total_r = math.sqrt(sum((rg[n] or 0.0) ** 2 for n in names))
        found = self.numbers("grad-norm", "global", total_l, total_r, "global gradient norm")
        if found:
            outcome.mismatches.append(found)
        # Backward runs from the loss to the inputs: the first parameter that differs in that order
        # (the last in registration order) is nearest to the cause.
        per_param = [m for n in reversed(names) if (m := self.numbers("grad-norm", n, lg[n], rg[n], f"gradient norm of {n}"))]
        if per_param:
            per_param[0].message = f"first diverging parameter (backward order): {per_param[0].message}"
        outcome.mismatches.extend(per_param)
        outcome.summary = f"global norm {total_l:.8g} vs {total_r:.8g} over {len(names)} parameters"

    # ------------------------------------------------------------------ 9. after one update
    def check_update(self, outcome: StageOutcome) -> None:
        ls, rs = self.left.fp.step, self.right.fp.step
        if ls is None or rs is None:
            outcome.skipped = "not compared: no step recorded"
            return
        compared, notes = [], []
        if ls.loss_after_step is None or rs.loss_after_step is None:
            notes.append("loss after the update not recorded on both sides")
        elif ls.after_step_batch != rs.after_step_batch:
            notes.append("the losses after the update are on different batches (capture vs probe)")
        else:
            compared.append(f"loss {ls.loss_after_step:.8g} vs {rs.loss_after_step:.8g}")
            found = self.numbers("loss", "loss-after-step", ls.loss_after_step, rs.loss_after_step, "loss after one update")
            if found:
                outcome.mismatches.append(found)
        lu, ru = self.left.update_norms, self.right.update_norms
        names = [n for n in self.common if n in lu and n in ru]
        noise = self._noise_level_gradients()
        names_compared = [n for n in names if n not in noise]
        if names:
            skipped = len(names) - len(names_compared)
            compared.append(f"update norms of {len(names_compared)} parameters"
                            + (f" ({skipped} with noise-level gradients left out)" if skipped else ""))
            for name in names_compared:
                found = self.numbers("update", name, lu[name], ru[name], f"update norm of {name}", self.update_rtol)
                if found:
                    outcome.mismatches.append(found)
        elif not self.common:
            notes.append("no parameter has the same name on both sides")
        else:
            notes.append("update norms not recorded on both sides")
        if not compared:
            outcome.skipped = "not compared: " + "; ".join(notes)
        else:
            outcome.summary = ", ".join(compared) + (f" ({'; '.join(notes)})" if notes else "")

    # ------------------------------------------------------------------ later steps (--steps N)
    def check_steps(self, outcome: StageOutcome) -> None:
        """The first step whose lr, then whose loss, differs. Losses after updates carry float noise
        that each update amplifies: they are compared within update_rtol (atol as everywhere). Each
        rank's own losses are compared too where both sides ran the same ranks (`rank_steps`)."""
        ls, rs = self.left.fp.step, self.right.fp.step
        sides = (("left", ls), ("right", rs))
        missing = [side for side, step in sides if step is None or not step.losses]
        unrecorded = [f"{side}: {step.steps_unrecorded}" for side, step in sides if step and step.steps_unrecorded]
        if missing:
            outcome.skipped = (f"not recorded: one step captured on the {' and the '.join(missing)} "
                               "(acclint capture --steps N records the loss and lr of N steps)"
                               + (f"; {'; '.join(unrecorded)}" if unrecorded else ""))
            return
        count = min(len(ls.losses), len(rs.losses))
        lr_step = self._first_lr_difference(ls.lrs or [], rs.lrs or [], count)
        if lr_step is not None:
            k, a, b = lr_step
            outcome.mismatches.append(Mismatch(
                "optimizer-hparam", f"lr-step-{k}", a, b,
                f"the lr first differs at step {k}: {_show_lrs(a)} on the left, {_show_lrs(b)} on the right"
                + (f" ({_steps_before(k)} the same)" if k else "") + ": the lr schedule differs",
            ))
        tolerance = f"rtol {self.update_rtol:g} / atol {self.atol:g}"
        k = first_divergence(ls.losses, rs.losses, lambda x, y: self.close(x, y, self.update_rtol))
        if k is not None:
            a, b = ls.losses[k], rs.losses[k]
            rel = abs(a - b) / max(abs(a), abs(b)) if max(abs(a), abs(b)) else math.inf
            outcome.mismatches.append(Mismatch(
                "loss", f"loss-step-{k}", a, b,
                f"the loss first diverges at step {k}: {a:.8g} vs {b:.8g} (relative difference {rel:.2e}, beyond "
                f"{tolerance})" + (f"; {_steps_before(k)} match" if k else ""),
                consequence_of="optimizer-hparam" if lr_step is not None and lr_step[0] <= k else None,
            ))
        by_rank, ranks = compare_ranks(self.left.fp, self.right.fp,
                                       lambda x, y: self.close(x, y, self.update_rtol), tolerance)
        if by_rank is not None and k is None:  # the mean holds: a rank's own drift is the finding
            by_rank.consequence_of = "optimizer-hparam" if lr_step is not None else None
            outcome.mismatches.append(by_rank)
        said = [] if len(ls.losses) == len(rs.losses) else [f"{len(ls.losses)} vs {len(rs.losses)} steps recorded"]
        said += [text for text in (ranks, *unrecorded) if text]
        outcome.summary = (f"loss and lr of {count} steps (rtol {self.update_rtol:g})"
                           + "".join(f"; {text}" for text in said))

    @staticmethod
    def _first_lr_difference(left: list[list[float]], right: list[list[float]],
                             count: int) -> tuple[int, list[float], list[float]] | None:
        for k in range(min(count, len(left), len(right))):
            a, b = left[k], right[k]
            # groups are compared in order; a different number of groups is the optimizer stage's finding
            if not all(values_equal(x, y) for x, y in zip(a, b)):
                return k, a, b
        return None

    def _noise_level_gradients(self) -> set[str]:
        """Parameters whose gradient is zero within tolerance on both sides (e.g. a bias followed by
        BatchNorm): an adaptive optimizer turns that noise into a full-size, meaningless update."""
        lg, rg = self.left.grad_norms, self.right.grad_norms
        names = [n for n in self.common if n in lg and n in rg]
        if not names:
            return set()
        total = max(math.sqrt(sum((g[n] or 0.0) ** 2 for n in names)) for g in (lg, rg))
        floor = self.atol + self.rtol * total
        return {n for n in names if (lg[n] or 0.0) <= floor and (rg[n] or 0.0) <= floor}

    # ------------------------------------------------------------------ 10. environment
    def check_env(self, outcome: StageOutcome) -> None:
        le, re_ = self.left.fp.env, self.right.fp.env
        l_eff, r_eff = le.get("effective", {}), re_.get("effective", {})
        for key in sorted(set(l_eff) & set(r_eff)):
            a, b = l_eff[key], r_eff[key]
            if a is not None and b is not None and a != b:
                outcome.mismatches.append(Mismatch("env", key, a, b, f"{key} is {a} on the left, {b} on the right"))
        if self.seed is not None:
            outcome.mismatches.insert(0, self.seed)

        lv, rv = le.get("versions", {}), re_.get("versions", {})
        outcome.summary = " vs ".join(
            f"{fp.framework} {versions.get(fp.framework, '?')}" for fp, versions in ((self.left.fp, lv), (self.right.fp, rv))
        )
        if self.left.fp.world_size != self.right.fp.world_size:
            outcome.summary += f" ({world_sizes(self.left.fp, self.right.fp)})"


def _forward_views_differ(left: Fingerprint, right: Fingerprint) -> str | None:
    """Why the forward stages cannot be set side by side: a data-parallel run's forward is rank 0's
    share of the batch, which another world size does not see."""
    if left.world_size == right.world_size:
        return None
    viewed = [side for side, fp in (("left", left), ("right", right))
              if fp.env.get("settings", {}).get(FORWARD_VIEW) == RANK_ZERO_VIEW]
    if not viewed:
        return None
    return (f"not compared: the {' and the '.join(viewed)} forward is rank 0's share of a data-parallel batch, and the "
            f"world size differs ({world_sizes(left, right)}); data, loss and gradients cover the whole batch")


def _show(value: Any) -> str:
    """Hyperparameters for people: float32-stored values print as what was meant (9.9999997e-07 -> 1e-06)."""
    if isinstance(value, float):
        return f"{value:.7g}"
    return str(value)


def _steps_before(k: int) -> str:
    return "step 0" if k == 1 else f"steps 0-{k - 1}"


def _show_lrs(lrs: list[float]) -> str:
    return _show(lrs[0]) if len(set(lrs)) == 1 else "[" + ", ".join(_show(v) for v in lrs) + "]"


def _nonfinite(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+inf" if value > 0 else "-inf") if math.isinf(value) else "finite"


def _diff_hparams(mine: Mapping[str, Any], other: Mapping[str, Any], only_differences: bool) -> str:
    keys = sorted(k for k in mine if not only_differences or not values_equal(mine[k], hparam(other, k)))
    return ", ".join(f"{k} {_show(mine[k])}" for k in keys) or "same settings"


def _stats_view(record: TensorRecord) -> dict[str, Any]:
    view = {key: record.stats[key] for key in ("norm", "mean", "std", "min", "max") if key in record.stats}
    view["sha256"] = record.sha256[:16]
    return view


def _max_abs_difference(left: Any, right: Any, left_name: str, right_name: str) -> str:
    if not left or not right or left_name not in left or right_name not in right:
        return ""
    import numpy as np

    a, b = left[left_name], right[right_name]
    if a.shape != b.shape:
        return ""
    return f", max |difference| {float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))):.3g}"
