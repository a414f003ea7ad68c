"""The stages of a comparison, in the order the migration guides check parity."""

from __future__ import annotations

# (stage id, title) in the order the migration guides check parity.
STAGES = (
    ("count", "parameter count"),
    ("names", "names and shapes"),
    ("frozen", "frozen parameters"),
    ("optimizer", "optimizer"),
    ("weights", "initial weights"),
    ("mode", "training mode"),
    ("loss", "step-0 loss"),
    ("grads", "gradients"),
    ("update", "after one update"),
    ("env", "environment"),
)
TITLES = dict(STAGES)

# A stage is compared only when none of these stages reported a difference.
PREREQUISITES = {
    "weights": ("count", "names"),
    "loss": ("count", "names", "weights", "mode"),
    "grads": ("count", "names", "frozen", "weights", "mode", "loss"),
    "update": ("count", "names", "frozen", "optimizer", "weights", "mode", "loss", "grads"),
}
