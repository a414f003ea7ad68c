"""The stages of a comparison, in the order the migration guides check parity, and what follows from what."""

from __future__ import annotations

# (stage id, title) in the order the migration guides check parity: data first, then the model
# and its optimizer, then the forward pass module by module, the loss, the backward, the update.
STAGES = (
    ("data", "data"),
    ("count", "parameter count"),
    ("names", "names and shapes"),
    ("frozen", "frozen parameters"),
    ("optimizer", "optimizer"),
    ("weights", "initial weights"),
    ("mode", "training mode"),
    ("settings", "module settings"),
    ("forward", "forward"),
    ("loss", "step-0 loss"),
    ("grads", "gradients"),
    ("update", "after one update"),
    ("steps", "later steps"),
    ("env", "environment"),
)
TITLES = dict(STAGES)

# Every stage is measured. A difference in a stage listed here changes this stage's numbers too,
# so a difference found here after one there is reported as its consequence, not as a cause.
UPSTREAM = {
    "weights": ("count", "names"),
    "forward": ("data", "count", "names", "weights", "mode", "settings"),
    "loss": ("data", "count", "names", "weights", "mode", "settings", "forward"),
    "grads": ("data", "count", "names", "frozen", "weights", "mode", "settings", "forward", "loss"),
    "update": ("data", "count", "names", "frozen", "optimizer", "weights", "mode", "settings", "forward", "loss",
               "grads"),
    "steps": ("data", "count", "names", "frozen", "optimizer", "weights", "mode", "settings", "forward", "loss",
              "grads", "update"),
}

# A different seed (within one framework) draws other initial weights, another shuffling of the
# data and other dropout masks: differences in these stages follow from it, and it is the root
# cause although the environment stage comes last.
SEED_FEEDS = ("data", "weights", "forward", "loss", "grads", "update", "steps")

# The fingerprint format version that first recorded a stage; an older file lacks it.
ADDED_IN_FORMAT = {"data": 2, "settings": 2, "forward": 2}

# The stage each mismatch kind is reported in ("loss" also appears under "update", as loss-after-step).
KIND_STAGES = {
    "batch": "data",
    "param-count": "count",
    "param-shape": "names",
    "param-missing": "names",
    "frozen": "frozen",
    "optimizer-type": "optimizer",
    "optimizer-hparam": "optimizer",
    "optimizer-group": "optimizer",
    "init-weights": "weights",
    "train-mode": "mode",
    "module-config": "settings",
    "activation": "forward",
    "loss": "loss",
    "grad-norm": "grads",
    "update": "update",
    "env": "env",
}


class StagedVerdict:
    """What every verdict made of stages offers (a fingerprint comparison, a dump comparison): the
    differences in stage order, and parity when there are none. Subclasses hold `stages`, each
    outcome with its `mismatches`."""

    stages: list

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def mismatches(self) -> list:
        return [m for outcome in self.stages for m in outcome.mismatches]
