"""`acclint diff LEFT RIGHT`: the setup diff of the two paths plus the model-code diff of their
Python files, as one result. A pair of model files with no training settings is compared on its
model code alone; a side with neither is an error, not an empty diff."""

from __future__ import annotations

from typing import Iterable

from acclint.setups import keys
from acclint.setups.diff import DiffResult, diff_setups
from acclint.setups.extract import extract
from acclint.setups.model import Rows, diff_model, read_model
from acclint.setups.record import SetupError


class NothingToCompare(SetupError):
    """A side with no training setting acclint recognises, and no model code the diff could compare."""


def diff_paths(left: str, right: str, ignore: Iterable[str] = ()) -> DiffResult:
    """Raises SetupError when a side cannot be read, NothingToCompare when there is nothing to diff."""
    models = [read_model(left), read_model(right)]
    # The setup extraction reads the facts of the Python files the model reader parsed: one parse each.
    sides = [extract(path, {file.facts.abspath: file.facts for file in model.files})
             for path, model in zip((left, right), models)]
    rows = diff_model(*models)
    empty = [side for side in sides if not side.settings]
    if empty and not rows.compared:
        raise NothingToCompare("\n".join(
            f"no training settings or model operations found in {side.path} "
            f"({'; '.join(side.problems) or 'nothing acclint recognises'})"
            for side in empty
        ))
    ignore = list(ignore)
    result = diff_setups(*sides, ignore=ignore)
    merge(result, rows, keys.expand_ignores(ignore))
    return result


def merge(result: DiffResult, rows: Rows, patterns: list) -> None:
    """Add the model-code rows; a setup key they supersede (the same fused call) leaves the result."""
    result.mismatches = [m for m in result.mismatches if m.key not in rows.supersedes]
    for name in ("same", "ignored", "only_left", "only_right"):
        setattr(result, name, [key for key in getattr(result, name) if key not in rows.supersedes])
    for mismatch in rows.mismatches:
        if keys.user_ignored(mismatch.key, patterns, mismatch.category):
            result.ignored.append(mismatch.key)
        else:
            result.mismatches.append(mismatch)
    result.same.extend(rows.same)
    result.model_keys |= set(rows.same) | {mismatch.key for mismatch in rows.mismatches}
